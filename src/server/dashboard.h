// GET /dashboard: one self-contained page (no CDN, no external file) that polls
// /v1/mtplx/stats and shows throughput with a chart over time, acceptance by depth, slots, the
// queue, prefix-cache hits and memory. With an API key, open it as /dashboard#key=KEY.
#pragma once

namespace mtplx::server {

const char* DashboardHtml();

}  // namespace mtplx::server
