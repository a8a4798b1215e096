package ui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/memstore"
	"github.com/faultline/faultline/ui"
)

// A team mounts the UI in its own service, under its own mux: the handler's
// paths are absolute, so it goes at "/" (or behind a StripPrefix).
func ExampleNew() {
	dlqStore, err := memstore.New(store.Config{Namespace: "billing"})
	if err != nil {
		panic(err)
	}
	h, err := ui.New(ui.Config{Store: dlqStore, Namespace: "billing", Listen: "127.0.0.1:8080", User: "ops"})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)

	req := httptest.NewRequest(http.MethodGet, "/entries", nil)
	req.Host = "127.0.0.1:8080"
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))

	// Off loopback, the UI wants named tokens and TLS.
	_, err = ui.New(ui.Config{Store: dlqStore, Listen: "0.0.0.0:8080"})
	fmt.Println(err != nil)
	// Output:
	// 200 text/html; charset=utf-8
	// true
}
