package layout_test

import (
	"encoding/json"
	"testing"

	"github.com/faultline/faultline/layout"
)

// FuzzParseEntry holds ParseEntry to its promise on any bytes: no panic,
// Raw is always JSON, an entry without an ID is corrupt or NoID, and
// corrupt once RequireID is applied.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{
		`{"job": {"id": "a"}, "error": "e", "retries": 2, "status": "deleted"}`,
		`{"job": {"id": 1e400}}`, `{"job": {"id": "a"}, "retries": 1e30}`, `[1, 2]`, `"x"`, `null`, ``, "\xff\xfe",
		`{"job": {"id": {"x": 1}}}`, `{"job": {"id": "a"}} trailing`, `{"a":` + string(make([]byte, 10)),
	} {
		f.Add(s, "job.id")
	}
	f.Add(`{"": {"": "x"}}`, ".")
	f.Add(`{"a": "b"}`, "")
	f.Fuzz(func(t *testing.T, raw, idPath string) {
		fields := layout.Fields{ID: idPath, Severity: "severity", Error: "error", Class: "type", Retries: "retries",
			Status: "status", Inactive: []string{"deleted"}}
		e := layout.ParseEntry("src", []byte(raw), fields)
		if !json.Valid(e.Raw) {
			t.Fatalf("Raw %q is not JSON", e.Raw)
		}
		if e.JobID == "" && e.Corrupt == "" && e.NoID == "" {
			t.Fatalf("an entry without an ID is marked neither corrupt nor NoID: %+v", e)
		}
		if e.NoID != "" && (e.JobID != "" || e.Corrupt != "") {
			t.Fatalf("NoID with a job ID or corrupt: %+v", e)
		}
		if r := e.RequireID(); r.JobID == "" && r.Corrupt == "" {
			t.Fatalf("RequireID left an entry without an ID uncorrupt: %+v", r)
		}
		if e.Source != "src" {
			t.Fatalf("source %q", e.Source)
		}
	})
}

// FuzzRender holds Render to its promise on any template and job: no
// panic, and a document it returns marshals as JSON.
func FuzzRender(f *testing.F) {
	f.Add(layout.DefaultTemplate, "id-1", `{"a": 1}`, 1)
	f.Add(`{"job": {"id": "{id}", "xs": ["{payload}", {"k": "{key}"}]}}`, `"quoted"`, "not json", 2)
	f.Add(`{"p": "{payload}"}`, "", "12345678901234567890123", 0)
	f.Add(`[]`, "x", "", -1)
	f.Add(`{"a": 1} {"b": 2}`, "x", "", 3)
	f.Add(`{`, "\x00", "\xff", 4)
	f.Fuzz(func(t *testing.T, tmpl, id, payload string, n int) {
		doc, err := layout.Render(tmpl, layout.Job{ID: id, Task: "t", Key: "k", Payload: payload, N: n})
		if err != nil {
			if doc != nil {
				t.Fatalf("a document with an error: %v", err)
			}
			return
		}
		if _, err := json.Marshal(doc); err != nil {
			t.Fatalf("the document does not marshal: %v", err)
		}
	})
}
