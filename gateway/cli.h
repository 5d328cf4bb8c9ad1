// The command-line conventions both binaries (dscpgw, dscpgw-hostmark) follow: subcommands with
// their own options, `--opt value` and `--opt=value`, `-h`/`--help` on every subcommand (the help
// lists that subcommand's options), `--version`, and one exit-code table (docs/operations.md).
#pragma once

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace dscpgw::cli {

// Exit codes of both binaries.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // A runtime failure: a device, the EAL, a socket, BPF.
inline constexpr int kExitUsage = 2;    // Bad usage, an invalid config or unusable input.

struct Option {
    const char* name;   // "--config".
    const char* value;  // The value's placeholder ("FILE"); nullptr for a flag.
    const char* help;
};

struct Command {
    const char* name;     // "check".
    const char* summary;  // One line.
    std::vector<Option> options;
    const char* operands = nullptr;  // Free words after the options ("COMMAND [ARGS]"), if any.
};

struct Parsed {
    std::map<std::string, std::string> values;  // By option name; flags map to "".
    std::vector<std::string> operands;
    bool help = false;
    bool version = false;  // --version, which every command takes.
    std::string error;     // Non-empty: bad usage.

    bool has(const std::string& name) const { return values.count(name) != 0; }
    std::string get(const std::string& name, const std::string& dflt = "") const {
        const auto it = values.find(name);
        return it == values.end() ? dflt : it->second;
    }
};

// Parses argv[first..argc) against `c`'s options. With operands allowed, the first word that is
// not an option ends the options: it and everything after it are operands, passed on as they are
// (`dscpgw ctl flows --top 5`).
inline Parsed parse(const Command& c, int argc, char** argv, int first) {
    Parsed p;
    for (int i = first; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            p.help = true;
            continue;
        }
        if (a == "--version") {
            p.version = true;
            continue;
        }
        if (a.size() < 2 || a[0] != '-') {  // An operand: the rest are too.
            if (c.operands == nullptr) {
                p.error = "unexpected argument " + a;
                return p;
            }
            for (; i < argc; ++i) p.operands.emplace_back(argv[i]);
            break;
        }
        std::string value;
        bool inline_value = false;
        if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = a.substr(eq + 1);
            a.resize(eq);
            inline_value = true;
        }
        const Option* o = nullptr;
        for (const Option& x : c.options)
            if (a == x.name) o = &x;
        if (o == nullptr) {
            p.error = "unknown option " + a;
            return p;
        }
        if (o->value == nullptr) {
            if (inline_value) {
                p.error = a + " takes no value";
                return p;
            }
        } else {
            if (!inline_value) {
                if (i + 1 >= argc) {
                    p.error = a + " needs a value (" + o->value + ")";
                    return p;
                }
                value = argv[++i];
            }
            if (value.empty()) {
                p.error = a + " needs a value (" + o->value + ")";
                return p;
            }
        }
        p.values[a] = value;
    }
    return p;
}

// "usage: PROG NAME [options]" and one line per option.
inline std::string help_text(const char* prog, const Command& c) {
    std::string o = std::string("usage: ") + prog + " " + c.name;
    if (!c.options.empty()) o += " [options]";
    if (c.operands != nullptr) o += std::string(" ") + c.operands;
    o += std::string("\n") + c.summary + "\n";
    o += "options:\n";
    const auto line = [&o](const std::string& head, const char* help) {
        std::string h = "  " + head;
        h.resize(std::max<size_t>(h.size() + 2, 26), ' ');
        o += h + help + "\n";
    };
    for (const Option& x : c.options)
        line(std::string(x.name) + (x.value ? std::string(" ") + x.value : ""), x.help);
    line("--version", "the version");
    line("-h, --help", "this help");
    return o;
}

// The commands' one-line summaries, for the program's own help.
inline std::string command_list(std::initializer_list<const Command*> cs) {
    std::string o;
    for (const Command* c : cs) {
        std::string head = std::string("  ") + c->name;
        head.resize(std::max<size_t>(head.size() + 2, 12), ' ');
        o += head + c->summary + "\n";
    }
    return o;
}

}  // namespace dscpgw::cli
