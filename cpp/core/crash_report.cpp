// The crash line (crash_report.hpp): preformatted, written with one write(2) from the handler.
#include "core/crash_report.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace ranvier {
namespace {

struct CrashSignal {
  int number;
  const char* name;
  const char* what;
};

constexpr CrashSignal kSignals[] = {
    {SIGSEGV, "SIGSEGV", "an invalid memory access"},
    {SIGBUS, "SIGBUS", "a bus error: a memory-mapped file cut short, or an unaligned access"},
    {SIGFPE, "SIGFPE", "an arithmetic fault"},
    {SIGILL, "SIGILL", "an illegal instruction: a build for another CPU?"},
    {SIGABRT, "SIGABRT", "aborted"},
};
constexpr int kCount = sizeof(kSignals) / sizeof(kSignals[0]);
constexpr size_t kLine = 512;

// Process-wide by nature (see the header): one line and one previous action per signal.
char g_lines[kCount][kLine];
size_t g_lengths[kCount];
struct sigaction g_previous[kCount];
bool g_installed = false;
std::atomic<int> g_reported{0};
std::atomic<int> g_busy{0};   // a line is being re-worded (a crash then writes nothing)
std::atomic<int> g_notify_fd{-1};   // the job's death watch (ranvier.deathwatch): told before the line
// An alternate stack for the thread that installs the handlers (Python's main thread), so that
// a stack overflow there still gets its line.
alignas(16) char g_alt_stack[1 << 16];

void on_crash(int sig, siginfo_t*, void*) {
  int i = 0;
  while (i < kCount && kSignals[i].number != sig) ++i;
  if (i == kCount) return;
  // One line per process, even when several threads crash at once.
  if (g_reported.exchange(1) == 0) {
    const int notify = g_notify_fd.load();
    if (notify >= 0) {
      static const char failing[] = "failing\n";
      ssize_t ignored = write(notify, failing, sizeof(failing) - 1);
      (void)ignored;
    }
    if (g_busy.load() == 0) {
      ssize_t ignored = write(STDERR_FILENO, g_lines[i], g_lengths[i]);
      (void)ignored;
    }
  }
  struct sigaction previous = g_previous[i];
  if (previous.sa_handler == SIG_IGN) previous.sa_handler = SIG_DFL;   // a crash is never ignored
  sigaction(sig, &previous, nullptr);
  // Blocked while this handler runs: delivered to the previous handler when it returns. A fault
  // (an invalid access) would happen again on return anyway; a signal sent with kill would not.
  raise(sig);
}

void format_line(int i, const std::string& prefix, const std::string& suffix) {
  // A newline first: another rank's line (or the progress bar) may have stopped mid-line.
  std::string line = "\n" + prefix + "crashed (" + kSignals[i].name + ", " + kSignals[i].what + ")" + suffix + "\n";
  if (line.size() >= kLine) line = line.substr(0, kLine - 2) + "\n";
  std::memcpy(g_lines[i], line.data(), line.size());
  g_lengths[i] = line.size();
}

}  // namespace

void install_crash_report(const std::string& prefix, const std::string& suffix) {
  g_busy.store(1);
  for (int i = 0; i < kCount; ++i) format_line(i, prefix, suffix);
  g_busy.store(0);
  if (g_installed) return;
  stack_t alt{};
  alt.ss_sp = g_alt_stack;
  alt.ss_size = sizeof(g_alt_stack);
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE)) sigaltstack(&alt, nullptr);
  for (int i = 0; i < kCount; ++i) {
    struct sigaction action {};
    action.sa_sigaction = on_crash;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(kSignals[i].number, &action, &g_previous[i]);
  }
  g_installed = true;
}

void uninstall_crash_report() {
  if (!g_installed) return;
  for (int i = 0; i < kCount; ++i) sigaction(kSignals[i].number, &g_previous[i], nullptr);
  g_installed = false;
  g_reported.store(0);
}

std::vector<std::pair<int, std::string>> crash_report_signals() {
  std::vector<std::pair<int, std::string>> out;
  for (const auto& s : kSignals) out.emplace_back(s.number, s.name);
  return out;
}

bool crash_report_installed() { return g_installed; }

void set_crash_notify_fd(int fd) { g_notify_fd.store(fd); }

std::string crash_report_line(int sig) {
  for (int i = 0; i < kCount; ++i)
    if (kSignals[i].number == sig && g_installed) return std::string(g_lines[i], g_lengths[i]);
  return "";
}

}  // namespace ranvier
