// The control socket's views of a Report (`dscpgw ctl`): text tables and JSON.
#pragma once

#include <string>

#include "control/commands.h"
#include "control/report.h"

namespace dscpgw {

// A view command's answer; reload has none (the control thread answers it).
std::string render_text(const Report& r, CtlCommand what, size_t top = 20);
std::string render_json(const Report& r, CtlCommand what, size_t top = 20);
inline std::string render(const Report& r, const CtlRequest& req) {
    return req.json ? render_json(r, req.cmd, req.top) : render_text(r, req.cmd, req.top);
}

std::string json_escape(const std::string& s);

}  // namespace dscpgw
