// systemd's service notification protocol (sd_notify(3)), spoken directly: one datagram of
// "KEY=VALUE" lines to the AF_UNIX socket in $NOTIFY_SOCKET. Without the variable (not started by
// systemd, or not Type=notify) every call is a no-op. The watchdog's interval is $WATCHDOG_USEC,
// when $WATCHDOG_PID is unset or names this process.
#pragma once

#include <cstdint>
#include <string>

struct rte_rcu_qsbr;

namespace dscpgw {

class SystemdNotifier {
  public:
    SystemdNotifier();  // Reads the environment.
    bool enabled() const { return !path_.empty(); }
    uint64_t watchdog_usec() const { return watchdog_usec_; }
    // Sends "READY=1", "STATUS=...", "WATCHDOG=1"... (lines joined by '\n'); false on failure.
    bool send(const std::string& state) const;

  private:
    std::string path_;  // A leading '@' is the abstract namespace.
    uint64_t watchdog_usec_ = 0;
};

// Readiness and the watchdog from the workers' RCU quiescent states: a worker passes one per poll,
// busy or idle, so "every worker passed one since the last check" is "every worker is making
// progress". Driven from the control thread, so that a stalled control thread starves it too.
class WorkerWatch {
  public:
    WorkerWatch(rte_rcu_qsbr* rcu, unsigned workers) : rcu_(rcu), workers_(workers) {}
    // True once every worker has registered and then passed a quiescent state (polling).
    bool ready();
    // True when every worker passed a quiescent state since the previous call that returned true
    // (or since ready()); then a new round starts.
    bool progressed();

  private:
    rte_rcu_qsbr* rcu_;
    unsigned workers_;
    bool started_ = false, ready_ = false;
    uint64_t token_ = 0;
};

}  // namespace dscpgw
