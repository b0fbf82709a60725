// The `calibrate` command line: options, section dispatch, SIGINT, profile writing, exit
// codes. The only place where exceptions are caught and problems become exit codes.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "calibrate/calibrate.hpp"
#include "calibrate/context.hpp"
#include "calibrate/profile_writer.hpp"
#include "calibrate/provenance.hpp"
#include "calibrate/sections.hpp"
#include "calibrate/wander_log.hpp"
#include "models/atomic_file.hpp"

namespace pipeplan::calibrate {

const std::vector<Section>& all_sections() {
  static const std::vector<Section> sections = {
      {"copy", "host<->device copies: pinned/pageable, sizes, bidirectional, overlap, copy engines", run_copy},
      {"host", "one thread's memcpy rates (collate, pin thread); cudaHostAlloc/cudaHostRegister cost", run_host},
      {"ipc", "receiving a batch from another process through shared memory (map + first touch)", run_ipc},
      {"storage", "fio-style sequential/random reads, page cache bypassed", run_storage},
      {"decode", "libjpeg-turbo decode time and per-core speed as cores fill", run_decode},
      {"compute", "bf16 GEMM rate (cuBLAS), the share kept beside an H2D copy, a step's time against the GPU's duty", run_compute},
      {"nccl", "all-reduce, all-gather, reduce-scatter over every visible GPU (nccl-tests method)", run_nccl},
  };
  return sections;
}

namespace {

// The one mutable global: set by the SIGINT handler, read by sections between measurements.
std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted.store(true);
  ::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// Restores the previous SIGINT disposition when the run ends (run_cli may be called in-process).
class SigintGuard {
 public:
  SigintGuard() {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_);
  }
  ~SigintGuard() { sigaction(SIGINT, &previous_, nullptr); }
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;

 private:
  struct sigaction previous_ {};
};

std::string section_list() {
  std::string s;
  for (const auto& sec : all_sections()) s += (s.empty() ? "" : ", ") + std::string(sec.name);
  return s;
}

// Thrown only inside this file, caught in run_cli: a bad option (exit 2).
struct BadOption {
  std::string message;
};

std::vector<const Section*> parse_only(const std::string& list) {
  std::vector<const Section*> chosen;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    const auto it = std::find_if(all_sections().begin(), all_sections().end(),
                                 [&](const Section& s) { return s.name == name; });
    if (it == all_sections().end())
      throw BadOption{"--only: unknown section '" + name + "' (expected a comma-separated list of: " +
                      section_list() + ")"};
    if (std::find(chosen.begin(), chosen.end(), &*it) == chosen.end()) chosen.push_back(&*it);
  }
  if (chosen.empty()) throw BadOption{"--only: empty list (expected a comma-separated list of: " + section_list() + ")"};
  // Run in the canonical order whatever order was asked (the pointers index one vector).
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

Scale scale_from_env(bool quick) {
  const char* env = std::getenv("PIPEPLAN_CALIBRATE_SCALE");
  if (env && std::string(env) == "tiny") return Scale::tiny;
  return quick ? Scale::quick : Scale::full;
}

std::string command_line(int argc, char** argv) {
  std::string cmd = (argc > 0 && std::string(argv[0]) == "calibrate") ? "pipeplan calibrate" : (argc > 0 ? argv[0] : "");
  for (int i = 1; i < argc; ++i) cmd += std::string(" ") + argv[i];
  return cmd;
}

int run(int argc, char** argv) {
  namespace po = boost::program_options;
  std::string out = "profile.json";
  std::string only;
  std::string storage_path;
  std::string wander_log;
  po::options_description desc(
      "Usage: pipeplan calibrate [--out PROFILE.json] [--only SECTION,...] [--quick] [--storage-path DIR]\n"
      "Measures this machine and writes a pipeplan-profile/1 hardware profile (docs/profile.md).\n"
      "Exit: 0 done, 2 bad option, 3 nothing requested could run here, 1 other error, 130 interrupted.\n"
      "Options");
  desc.add_options()("help,h", "print this help")(
      "out,o", po::value(&out), "profile to write (default profile.json); rewritten after each section")(
      "only", po::value(&only), "comma-separated sections to run (default: all)")(
      "quick", "about a minute in all (fewer sizes and trials); the full run takes at most 5 minutes")(
      "storage-path", po::value(&storage_path), "directory for the storage test files (default: a temporary one)")(
      "wander-from-log", po::value(&wander_log),
      "measure nothing: refit the core-speed wander (with its slower part) from an earlier run's log (its "
      "'wander chunk seconds' lines) and print it as JSON");

  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw BadOption{std::string(e.what()) + " (see pipeplan calibrate --help)"};
  }
  if (vm.count("help")) {
    std::cout << desc << "\nSections:\n";
    for (const auto& s : all_sections()) std::cout << "  " << s.name << std::string(10 - s.name.size(), ' ') << s.description << "\n";
    std::cout << "\nEnvironment: PIPEPLAN_CALIBRATE_SCALE=tiny shrinks every section to seconds (tests only).\n";
    return 0;
  }

  if (vm.count("wander-from-log")) {
    const TextFile log = read_text_file(wander_log, std::size_t{256} << 20);
    if (log.cannot_open) throw BadOption{"--wander-from-log: '" + wander_log + "' cannot be read (expected a calibrate log)"};
    if (!log.ok()) throw BadOption{"--wander-from-log: '" + wander_log + "' is " + log.error + " (expected a calibrate log)"};
    std::istringstream in(log.text);
    const auto fit = refit_wander_log(in);
    if (!fit)
      throw BadOption{"--wander-from-log: '" + wander_log +
                      "' has no 'decode: wander chunk seconds' line (expected the log of a full decode section)"};
    std::cout << fit->dump(1) << std::endl;
    return 0;
  }

  std::vector<const Section*> chosen;
  if (vm.count("only")) {
    chosen = parse_only(only);
  } else {
    for (const auto& s : all_sections()) chosen.push_back(&s);
  }
  if (out.empty()) throw BadOption{"--out: empty path (expected a file to write)"};
  {
    const std::filesystem::path out_dir = std::filesystem::path(out).has_parent_path() ? std::filesystem::path(out).parent_path() : ".";
    std::error_code ec;
    if (!std::filesystem::is_directory(out_dir, ec))
      throw BadOption{"--out: '" + out + "': directory '" + out_dir.string() + "' does not exist (expected a file in an existing directory)"};
  }
  if (!storage_path.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(storage_path, ec) || ::access(storage_path.c_str(), W_OK) != 0)
      throw BadOption{"--storage-path: '" + storage_path + "' is not a writable directory (expected an existing directory)"};
  }

  SigintGuard sigint_guard;
  RunContext ctx;
  ctx.scale = scale_from_env(vm.count("quick") > 0);
  ctx.storage_path = storage_path;
  ctx.cores = static_cast<unsigned>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  ctx.interrupt_flag = &g_interrupted;
  ctx.progress = [](const std::string& line) { std::cerr << "calibrate: " << line << std::endl; };

  const double t_start = now_s();
  nlohmann::json profile = {{"schema", "pipeplan-profile/1"}, {"provenance", collect_provenance(command_line(argc, argv))}};
  std::vector<std::string> notes;
  int ok = 0, unavailable = 0, failed = 0;

  for (const Section* s : chosen) {
    if (g_interrupted) break;
    const double t0 = now_s();
    ctx.log(std::string(s->name) + ": start");
    SectionOutcome outcome = s->run(ctx);
    if (!outcome.ok()) {
      const Problem& p = outcome.problem();
      if (p.kind == Problem::Kind::interrupted) break;
      std::cerr << "calibrate: " << s->name << ": " << (p.kind == Problem::Kind::unavailable ? "" : "failed: ") << p.reason
                << std::endl;
      (p.kind == Problem::Kind::unavailable ? unavailable : failed) += 1;
      continue;
    }
    ++ok;
    for (const auto& [key, value] : outcome.value().profile_keys.items()) profile[key] = value;
    for (const auto& n : outcome.value().notes) notes.push_back(std::string(s->name) + ": " + n);
    if (!notes.empty()) {
      std::string joined;
      for (const auto& n : notes) joined += (joined.empty() ? "" : "; ") + n;
      profile["provenance"]["note"] = joined;
    }
    profile["provenance"]["duration_s"] = now_s() - t_start;
    if (const std::string err = write_json_atomically(out, profile); !err.empty()) {
      std::cerr << "calibrate: " << err << std::endl;
      return 1;
    }
    std::ostringstream done;
    done.precision(3);
    done << s->name << ": done in " << (now_s() - t0) << " s, written to " << out;
    ctx.log(done.str());
  }

  if (g_interrupted) {
    std::cerr << "calibrate: interrupted; " << out << " holds the " << ok << " section(s) completed" << std::endl;
    return 130;
  }
  std::ostringstream summary;
  summary.precision(3);
  summary << ok << " section(s) measured, " << unavailable << " could not run here, " << failed << " failed, in "
          << (now_s() - t_start) << " s";
  ctx.log(summary.str());
  if (ok > 0) return failed > 0 ? 1 : 0;
  return failed > 0 ? 1 : 3;
}

}  // namespace

int run_cli(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const BadOption& e) {
    std::cerr << "calibrate: " << e.message << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "calibrate: error: " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace pipeplan::calibrate
