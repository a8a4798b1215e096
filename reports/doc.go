// Package reports holds the report model of a scenario run — the one value
// every format (JSON, text, JUnit XML, Markdown and HTML) is written from —
// and its JSON encoding.
//
// The model carries no wall-clock time and no absolute path: every instant
// is a virtual offset from the scenario's start, in integer milliseconds
// (fields ending in Ms), so the same scenario and seed give the same bytes
// on any machine, in any time zone, with any GOMAXPROCS.
//
// # Files
//
//   - doc.go: this map.
//   - result.go: the model (Result and every type it holds), ReportVersion
//     and the verdicts; its doc comments are the JSON Schema's
//     descriptions.
//   - read.go: the JSON encoding: WriteJSON, and Read with its errors
//     (ReadError, NewerVersionError) and older versions.
//   - schema.go: Schema, the report's JSON Schema generated from result.go
//     (go generate writes schema/report.schema.json with internal/gen).
//   - redact.go: Redact, what every writer applies to a report first.
//   - summary.go: what every format says alike: the summary line, the
//     failed and skipped expectations, the run's name and reproduce
//     command, offsets and plurals.
//   - blackbox.go: what every format shows of a black-box drill: what it
//     could not observe, and why, and its system under test.
//   - text.go: WriteText, the terminal report.
//   - junit.go: WriteJUnit and JUnitWriter, JUnit XML; Invariants, the
//     rules a report's invariants name.
//   - markdown.go: WriteMarkdown and MarkdownWriter, a CI job summary.
//   - html.go: WriteHTML, and the page's assets (html/: its template, CSS
//     and script, inlined under a Content-Security-Policy) and template
//     functions.
//   - html_model.go: the view the template reads (htmlView), built from a
//     Result.
//   - html_sections.go: the page's sections: the verdict, the confusion
//     matrix, where the jobs ended, the DLQ, the alerts.
//   - html_timeline.go: the timeline chart's geometry, rows and styles,
//     laid out top to bottom (newHTMLTimeline).
//   - html_lanes.go: the timeline's rows of faults, breakers, alerts and
//     operator steps.
//   - html_panels.go: the timeline's stacked-area panels, their axes,
//     marks and legend.
//   - diff.go: Diff and WriteDiff, what changed between two runs.
//   - merge.go: a sharded sweep's summary (SummaryWriter, SummaryReader)
//     and its JUnit suites merged (JUnitSuiteReader).
package reports
