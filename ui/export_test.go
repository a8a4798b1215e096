package ui

import "net/http"

// APIPatterns returns the patterns of the API routes h (from New) serves.
func APIPatterns(h http.Handler) []string {
	var out []string
	for _, rt := range h.(*server).apiRoutes() {
		out = append(out, rt.pattern)
	}
	return out
}
