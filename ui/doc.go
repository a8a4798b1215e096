// Package ui is faultline's web UI and JSON API for a dead letter queue:
// the `faultline dlq` CLI's reads and moves in a browser and over HTTP,
// with the same store operations, the same filters (dlq.FilterSpec: the
// query parameters are the CLI's flag names) and the same cut-off rules.
//
// New returns an http.Handler, so a team can mount it in its own service;
// `faultline ui` serves it. It is secure by default: it refuses a listen
// address off loopback without named tokens and TLS (Config.Validate), and
// foreign Host headers (DNS rebinding); every change is a POST carrying a
// CSRF token (an HMAC of who signed in and a per-browser cookie under a
// per-process secret; the cookie is __Host- and Secure over HTTPS) and
// not sent from another site or origin (Sec-Fetch-Site, Origin); a bulk
// move runs only the plan its confirmation signed (action, filter, IDs,
// cut-off, count, who) and refuses a request that differs; the API
// (/api/v1/) takes bearer tokens instead (without tokens, on loopback only,
// it answers its reads, GET, as the pages are served, and refuses its
// moves, which no CSRF token guards); pages render payloads
// and error texts as text under a Content-Security-Policy that allows
// only the binary's own script and style, by nonce. Every action is
// written to the store's audit stream (dlq.Auditor) and as one JSON line
// to Config.Log.
//
// Pages: / (dashboard: counts, and an SVG trend of the DLQ's depth over
// the last ?hours= from the samples the DLQ monitor records, when the
// store keeps them: dlq.DepthRecorder), /entries (the list: filters, cursor, selection,
// bulk moves of the filtered set after a confirmation stating the exact
// count), /entries/{id} (payload, history, requeue, edit, delete,
// restore, quarantine), /audit. API: GET /api/v1/stats, GET /api/v1/depth[?hours], GET
// /api/v1/entries[?filters&cursor&limit], GET /api/v1/entries/{id},
// POST /api/v1/entries/{id}/{requeue,delete,restore,quarantine,edit},
// POST /api/v1/{requeue,delete} (bulk: dry_run answers the count, the
// cut-off and the signed plan the run then carries), GET /api/v1/audit; GET
// /api/v1/openapi.json (no token needed) describes them all (OpenAPI 3.1).
//
// With Config.Seed instead of Config.Store it serves a DLQ in the
// tutorial's layout (`faultline ui --layout seed`) through package
// layout/seed, read-only unless SeedConfig.Requeue: / (the list, with the
// seed layout's filters), /seed/entry?ref=LIST@POSITION#DIGEST, and the
// safe requeue of one entry (only if it is still the one listed) or of the
// filtered set after a confirmation stating the count, carrying its
// cut-off (signed: a run takes no other); the API's /api/v1/seed/ routes mirror them. Its moves are
// written to SeedConfig.Audit (a namespace's audit stream) and the log.
//
// /metrics serves Prometheus metrics under the names and labels of package
// metrics (the drills' own): faultline_dlq_depth{severity} and
// faultline_dlq_oldest_age_seconds read from the store at each scrape,
// faultline_dlq_requeues_total and faultline_dlq_deletes_total (what the
// UI and API moved), faultline_errors_total{op} (failed actions by action
// name, failed reads as "read"), and faultline_request_duration_seconds{op}
// by route pattern ("GET /entries/{id}"), never by path. With tokens it
// takes a bearer token.
package ui
