#!/usr/bin/env bash
# Sourced by the device run scripts: carried_calibrate_binary prints the path of a runnable pipeplan-calibrate from
# .carry/, or nothing where there is none.
#
# device_build.sh stores the binary as .carry/pipeplan-calibrate.xz (about 0.9 MB against 3.5 MB plain): the tree
# that travels to the GPU machine is limited to 64 MiB on disk, and the validation results fill most of it
# (docs/status.md). Here it is unpacked into a fresh temporary folder (python3's lzma, which the harness needs
# anyway, so no xz binary is assumed). A plain .carry/pipeplan-calibrate, as older builds left it, is used as it is.
carried_calibrate_binary() {
  local carry=${1:-.carry}
  if [ -x "$carry/pipeplan-calibrate" ]; then
    echo "$carry/pipeplan-calibrate"
    return 0
  fi
  [ -f "$carry/pipeplan-calibrate.xz" ] || return 0
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/pipeplan-carry.XXXXXX") || return 0
  if python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as f, open(sys.argv[2], "wb") as g:
    shutil.copyfileobj(f, g)' "$carry/pipeplan-calibrate.xz" "$dir/pipeplan-calibrate" 2>/dev/null \
     && chmod +x "$dir/pipeplan-calibrate"; then
    echo "$dir/pipeplan-calibrate"
  else
    echo "carried_calibrate_binary: $carry/pipeplan-calibrate.xz: not a readable xz file (rebuild it with calibrate/device_build.sh)" >&2
    rm -rf "$dir"
  fi
}
