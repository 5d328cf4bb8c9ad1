#include "control/log.h"

#include <fnmatch.h>
#include <rte_log.h>
#include <sys/stat.h>

#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

namespace dscpgw {

namespace {

constexpr const char* kTypeNames[] = {
#define DSCPGW_X(name, help) "dscpgw." #name,
    DSCPGW_LOG_TYPES(DSCPGW_X)
#undef DSCPGW_X
};
std::array<int, static_cast<size_t>(Log::count_)> g_type{[] {
    std::array<int, static_cast<size_t>(Log::count_)> a{};
    a.fill(-1);
    return a;
}()};
bool g_journal = false;  // stderr is journald's stream: lines carry a <priority> prefix.

constexpr const char* kLevelNames[] = {"disabled", "emergency", "alert", "critical", "error",
                                       "warning",  "notice",    "info",  "debug"};

// stderr is the journal when systemd said so (JOURNAL_STREAM=DEV:INODE of that stream).
bool stderr_is_journal() {
    const char* js = std::getenv("JOURNAL_STREAM");
    struct stat st {};
    if (js == nullptr || fstat(2, &st) != 0) return false;
    unsigned long long dev = 0, ino = 0;
    return std::sscanf(js, "%llu:%llu", &dev, &ino) == 2 && dev == st.st_dev && ino == st.st_ino;
}

// Every registered type and its level, from rte_log_dump (DPDK 22.11 has no iterator).
std::vector<std::pair<std::string, std::string>> registered_types() {
    std::vector<std::pair<std::string, std::string>> out;
    char* buf = nullptr;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    if (f == nullptr) return out;
    rte_log_dump(f);
    std::fclose(f);
    std::istringstream in(std::string(buf, len));
    std::free(buf);
    for (std::string line; std::getline(in, line);) {
        // "id 12: lib.eal, level is info"
        const size_t colon = line.find(": "), comma = line.find(", level is ");
        if (line.rfind("id ", 0) != 0 || colon == std::string::npos || comma == std::string::npos)
            continue;
        out.emplace_back(line.substr(colon + 2, comma - colon - 2), line.substr(comma + 11));
    }
    return out;
}

}  // namespace

void log_init(uint32_t level) {
    for (size_t i = 0; i < g_type.size(); ++i)
        if (g_type[i] < 0) g_type[i] = rte_log_register_type_and_pick_level(kTypeNames[i], level);
    rte_openlog_stream(stderr);
    g_journal = stderr_is_journal();
}

void log_msg(Log t, uint32_t level, const char* fmt, ...) {
    const int type = g_type[static_cast<size_t>(t)];
    // Before log_init (unit tests, tools): info and above.
    if (type < 0 ? level > RTE_LOG_INFO : !rte_log_can_log(static_cast<uint32_t>(type), level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char* sev = level <= RTE_LOG_ERR       ? "error: "
                      : level == RTE_LOG_WARNING ? "warning: "
                                                 : "";
    // One write per line, so that lines from the control and worker threads do not interleave.
    char line[1200];
    const int prio = static_cast<int>(level) - 1;  // RTE_LOG_EMERG (1) is syslog's LOG_EMERG (0).
    if (g_journal)
        std::snprintf(line, sizeof line, "<%d>%s: %s%s\n", prio, kTypeNames[static_cast<size_t>(t)],
                      sev, msg);
    else
        std::snprintf(line, sizeof line, "%s: %s%s\n", kTypeNames[static_cast<size_t>(t)], sev,
                      msg);
    std::fputs(line, stderr);
    std::fflush(stderr);
}

uint32_t log_level_parse(const std::string& s) {
    for (uint32_t l = 1; l < std::size(kLevelNames); ++l)
        if (s == kLevelNames[l] || s == std::to_string(l)) return l;
    if (s == "err") return RTE_LOG_ERR;
    if (s == "warn") return RTE_LOG_WARNING;
    return 0;
}

const char* log_level_name(uint32_t level) {
    return level < std::size(kLevelNames) ? kLevelNames[level] : "?";
}

std::string log_levels(bool all) {
    std::string o;
    for (const auto& [name, level] : registered_types())
        if (all || name.rfind("dscpgw.", 0) == 0) {
            std::string n = name;
            n.resize(std::max<size_t>(n.size() + 1, 24), ' ');
            o += n + level + "\n";
        }
    return o;
}

bool log_set_level(const std::string& type, const std::string& level, std::string& msg) {
    const uint32_t l = log_level_parse(level);
    if (l == 0) {
        msg = "unknown log level \"" + level +
              "\": emergency, alert, critical, error, warning, notice, info or debug\n";
        return false;
    }
    size_t matched = 0;
    for (const auto& [name, lv] : registered_types())
        matched += fnmatch(type.c_str(), name.c_str(), 0) == 0 ? 1 : 0;
    if (matched == 0) {
        msg = "no log type matches \"" + type +
              "\" (dscpgw ctl log-level lists the gateway's, log-level --all every type)\n";
        return false;
    }
    rte_log_set_level_pattern(type.c_str(), l);
    msg = type + ": " + log_level_name(l) + " (" + std::to_string(matched) + " type" +
          (matched == 1 ? "" : "s") + ")\n";
    return true;
}

}  // namespace dscpgw
