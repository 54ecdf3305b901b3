// One line on stderr when the process crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), before
// the signal ends it: `ranvier: error: rank 1 of 3: crashed (SIGSEGV, an invalid memory access);
// stopping every rank`. Without it a rank that crashes under mpiexec leaves only the launcher's
// block of '=' lines, and a single process only the shell's "Segmentation fault".
//
// The handler is async-signal-safe: the lines are formatted when the handler is installed, and
// the handler does one write(2) on fd 2, puts back the handler that was there before (the
// default: the process ends with the signal, a core file where those are enabled; Python's
// faulthandler where -X faulthandler enabled it: its traceback follows the line) and raises the
// signal again, so the process still ends as the signal says (exit status 128 + signal).
//
// A signal handler is process-wide state by nature: the preformatted lines and the previous
// handlers are the one exception to "no global singletons", kept inside crash_report.cpp.
#pragma once
#include <string>
#include <vector>

namespace ranvier {

// Installs (or re-words: a second call keeps the first call's previous handlers) the handlers.
// `prefix` comes before "crashed (SIG...)": "ranvier: error: " or "ranvier: error: rank 1 of 3: ";
// `suffix` after it: "; stopping every rank" or "".
void install_crash_report(const std::string& prefix, const std::string& suffix);

// Puts back the handlers that were there before install_crash_report (the command line, called
// in a process of its own or from a test, leaves the process as it found it).
void uninstall_crash_report();

// The signals handled, as (number, name) pairs; and whether the handlers are installed now.
std::vector<std::pair<int, std::string>> crash_report_signals();
bool crash_report_installed();

// A socket to which the handler writes "failing\n" before its line (-1: none): the job's death
// watch (ranvier.deathwatch) then knows the rank's end was reported and says nothing more.
void set_crash_notify_fd(int fd);

// The line the handler writes for signal `sig` (tests), "" for a signal it does not handle.
std::string crash_report_line(int sig);

}  // namespace ranvier
