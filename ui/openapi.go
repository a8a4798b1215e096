package ui

import (
	_ "embed"
	"net/http"
)

// openAPI is the API's OpenAPI 3.1 document, written by hand.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the API's OpenAPI 3.1 document (JSON), as
// /api/v1/openapi.json serves it.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// serveOpenAPI serves the document. It needs no token: it describes the
// API, and holds no data.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	_, _ = w.Write(openAPI)
}
