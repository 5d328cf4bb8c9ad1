#include "control/sdnotify.h"

#include <rte_rcu_qsbr.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace dscpgw {

SystemdNotifier::SystemdNotifier() {
    const char* s = std::getenv("NOTIFY_SOCKET");
    if (s != nullptr && (s[0] == '/' || s[0] == '@') &&
        std::strlen(s) < sizeof(sockaddr_un::sun_path))
        path_ = s;
    const char* usec = std::getenv("WATCHDOG_USEC");
    const char* pid = std::getenv("WATCHDOG_PID");
    if (usec != nullptr && (pid == nullptr || std::strtoll(pid, nullptr, 10) == getpid()))
        watchdog_usec_ = std::strtoull(usec, nullptr, 10);
}

bool SystemdNotifier::send(const std::string& state) const {
    if (path_.empty()) return false;
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path_.data(), path_.size());
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path_.size());
    if (path_[0] == '@')
        a.sun_path[0] = '\0';
    else
        ++len;  // The terminating NUL of a path.
    const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const ssize_t n = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                             reinterpret_cast<const sockaddr*>(&a), len);
    close(fd);
    return n == static_cast<ssize_t>(state.size());
}

bool WorkerWatch::ready() {
    if (ready_) return true;
    if (rcu_ == nullptr) return false;
    // Every worker registered: from then on, a round that completes means each one polls.
    if (!started_) {
        if (__atomic_load_n(&rcu_->num_threads, __ATOMIC_ACQUIRE) < workers_) return false;
        token_ = rte_rcu_qsbr_start(rcu_);
        started_ = true;
        return false;
    }
    if (rte_rcu_qsbr_check(rcu_, token_, false) != 1) return false;
    ready_ = true;
    token_ = rte_rcu_qsbr_start(rcu_);
    return true;
}

bool WorkerWatch::progressed() {
    if (!ready_ || rte_rcu_qsbr_check(rcu_, token_, false) != 1) return false;
    token_ = rte_rcu_qsbr_start(rcu_);
    return true;
}

}  // namespace dscpgw
