#include "control/commands.h"

#include <cstdlib>
#include <sstream>
#include <string_view>
#include <vector>

#include "dataplane/trace.h"

namespace dscpgw {

namespace {

// A whole number in [lo, hi]; false when the word is not one.
bool number_in(const std::string& w, unsigned long lo, unsigned long hi, unsigned long& v) {
    char* end = nullptr;
    if (w.empty() || w[0] == '-') return false;
    v = std::strtoul(w.c_str(), &end, 10);
    return *end == '\0' && v >= lo && v <= hi;
}

bool parse_trace(const std::vector<std::string>& words, CtlRequest& req, std::string& err) {
    using Op = CtlRequest::TraceOp;
    for (size_t i = 1; i < words.size(); ++i) {
        const std::string& w = words[i];
        const bool has_value = i + 1 < words.size();
        unsigned long v = 0;
        Op op = Op::none;
        if (w == "--json") {
            req.json = true;
        } else if (w == "--count") {
            if (!has_value || !number_in(words[i + 1], 1, kTraceMax, v)) {
                err = "--count needs a number 1.." + std::to_string(kTraceMax) + "\n";
                return false;
            }
            req.trace_count = static_cast<uint32_t>(v);
            ++i;
        } else if (w == "--timeout") {
            if (!has_value || !number_in(words[i + 1], 1, 3600, v)) {
                err = "--timeout needs a number of seconds 1..3600\n";
                return false;
            }
            req.trace_timeout = static_cast<double>(v);
            ++i;
        } else if (w == "--port" || w == "--class") {
            if (!has_value || words[i + 1].empty() || words[i + 1][0] == '-') {
                err = w + " needs a name\n";
                return false;
            }
            (w == "--port" ? req.trace_port : req.trace_class) = words[++i];
        } else if (w == "--start" || w == "--stop") {
            op = w == "--start" ? Op::start : Op::stop;
        } else if (w == "--read") {
            if (!has_value || !number_in(words[i + 1], 0, kTraceMax, v)) {
                err = "--read needs a record number\n";
                return false;
            }
            req.trace_from = static_cast<uint32_t>(v);
            op = Op::read;
            ++i;
        } else {
            err = "unknown argument \"" + w + "\" for trace\n";
            return false;
        }
        if (op != Op::none) {
            if (req.trace_op != Op::none) {
                err = "trace takes one of --start, --read, --stop\n";
                return false;
            }
            req.trace_op = op;
        }
    }
    return true;
}

}  // namespace

std::string ctl_synopsis() {
    std::string o;
    for (const CtlCommandInfo& c : kCtlCommands)
        o += (o.empty() ? "" : " | ") + std::string(c.name) + std::string(c.args);
    return o;
}

std::string ctl_help(const char* indent) {
    size_t width = 0;
    for (const CtlCommandInfo& c : kCtlCommands)
        width = std::max(width, std::string_view(c.name).size() + std::string_view(c.args).size());
    std::string o;
    for (const CtlCommandInfo& c : kCtlCommands) {
        std::string head = std::string(c.name) + std::string(c.args);
        head.resize(width + 2, ' ');
        o += indent + head + std::string(c.help) + "\n";
    }
    return o;
}

bool parse_ctl_request(const std::string& line, CtlRequest& req, std::string& err) {
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    const std::string usage =
        "commands: " + ctl_synopsis() + "; --json after a view command gives JSON\n";
    if (words.empty()) {
        err = "empty request; " + usage;
        return false;
    }
    size_t c = 0;
    while (c < std::size(kCtlCommands) && kCtlCommands[c].name != words[0]) ++c;
    if (c == std::size(kCtlCommands)) {
        err = "unknown command \"" + words[0] + "\"; " + usage;
        return false;
    }
    req = CtlRequest{};
    req.cmd = static_cast<CtlCommand>(c);
    if (req.cmd == CtlCommand::reload && words.size() != 1) {
        err = "reload takes no arguments\n";
        return false;
    }
    if (req.cmd == CtlCommand::log_level) {
        std::vector<std::string> rest;
        for (size_t i = 1; i < words.size(); ++i) {
            if (words[i] == "--all")
                req.all = true;
            else
                rest.push_back(words[i]);
        }
        if (rest.size() == 2 && !req.all && rest[0][0] != '-' && rest[1][0] != '-') {
            req.log_type = rest[0];
            req.log_level = rest[1];
        } else if (!rest.empty()) {
            err = "log-level takes TYPE LEVEL (to set) or nothing (to list)\n";
            return false;
        }
        return true;
    }
    if (req.cmd == CtlCommand::trace) return parse_trace(words, req, err);
    for (size_t i = 1; i < words.size(); ++i) {
        if (words[i] == "--json") {
            req.json = true;
        } else if (words[i] == "--top" && req.cmd == CtlCommand::flows && i + 1 < words.size()) {
            char* end = nullptr;
            const unsigned long n = std::strtoul(words[i + 1].c_str(), &end, 10);
            if (*end != '\0' || n == 0 || n > 10000) {
                err = "--top needs a number 1..10000\n";
                return false;
            }
            req.top = n;
            ++i;
        } else {
            err = "unknown argument \"" + words[i] + "\" for " + words[0] + "\n";
            return false;
        }
    }
    return true;
}

}  // namespace dscpgw
