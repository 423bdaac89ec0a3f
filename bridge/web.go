package bridge

import "embed"

// webFiles is the dashboard: a page, its script and style, and the
// vendored plotting library (web/vendor).
//
//go:embed web
var webFiles embed.FS
