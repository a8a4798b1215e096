package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/faultline/faultline/internal/age"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/fleet"
	"github.com/faultline/faultline/reference/redact"
)

// entryRow is one entry as list prints it (json, jsonl): its fields, the
// last failure's error masked, no payload.
type entryRow struct {
	ID            string    `json:"id"`
	Task          string    `json:"task,omitempty"`
	Queue         string    `json:"queue,omitempty"`
	Status        string    `json:"status"`
	Severity      string    `json:"severity,omitempty"`
	Class         string    `json:"class,omitempty"`
	ErrorType     string    `json:"error_type,omitempty"`
	Error         string    `json:"error,omitempty"`
	Attempts      int       `json:"attempts"`
	Requeues      int       `json:"requeues,omitempty"`
	FirstFailedAt time.Time `json:"first_failed_at,omitzero"`
	LastFailedAt  time.Time `json:"last_failed_at,omitzero"`
	Reason        string    `json:"reason,omitempty"`
	Corrupt       bool      `json:"corrupt,omitempty"`
	DecodeError   string    `json:"decode_error,omitempty"`
}

func rowOf(e *dlq.Entry) entryRow {
	if e.Corrupt {
		return entryRow{ID: e.ID(), Status: "corrupt", Corrupt: true, DecodeError: masked(e.DecodeError)}
	}
	r := entryRow{ID: e.ID(), Task: e.Job.Task, Queue: e.SourceQueue, Status: e.Status.String(),
		Severity: e.Severity().String(), Class: e.Verdict.Class.String(), ErrorType: e.ErrorType(),
		Attempts: e.Job.Attempts, Requeues: e.Requeues, FirstFailedAt: e.FirstFailedAt, LastFailedAt: e.LastFailedAt,
		Reason: masked(e.Reason)}
	if r.Queue == "" {
		r.Queue = e.Job.QueueName()
	}
	if n := len(e.History); n > 0 {
		r.Error = masked(e.History[n-1].Error)
	}
	return r
}

// statsView is stats as json prints it.
type statsView struct {
	Redis      string         `json:"redis"`
	Namespace  string         `json:"namespace"`
	Total      int            `json:"total"`
	Corrupt    int            `json:"corrupt"`
	ByStatus   map[string]int `json:"by_status"`
	BySeverity map[string]int `json:"by_severity"`
	ByClass    map[string]int `json:"by_class"`
	ByTask     map[string]int `json:"by_task"`
	// OldestFailed and Newest are the oldest and the newest entry still
	// failed (waiting for a decision).
	OldestFailed *stamp `json:"oldest_failed,omitempty"`
	Newest       *stamp `json:"newest_failed,omitempty"`
	Evicted      int    `json:"evicted"`
	Rejected     int    `json:"rejected"`
	Held         int    `json:"held"`
	HeldOldestAt string `json:"held_oldest_at,omitempty"`
	// Leader is the fleet's control: the standalone workers' leader and
	// the records relayed to it not read yet.
	Leader *leaderView `json:"leader,omitempty"`
}

// leaderView is a fleet's control status (fleet.Status) as stats prints
// it.
type leaderView struct {
	Holder  string     `json:"holder,omitempty"`
	Term    uint64     `json:"term"`
	Until   *time.Time `json:"until,omitempty"`
	Held    bool       `json:"held"`
	Backlog int64      `json:"relay_backlog"`
	// Text is fleet.Status.Describe's.
	Text string `json:"text"`
}

// leaderOf reads the fleet's control status; nil when the store cannot
// tell it.
func leaderOf(ctx context.Context, st any, now time.Time) (*leaderView, error) {
	sr, ok := st.(fleet.StatusReader)
	if !ok {
		return nil, nil
	}
	fs, err := sr.ControlStatus(ctx, fleet.DefaultRole)
	if err != nil {
		return nil, err
	}
	v := &leaderView{Holder: masked(fs.Lease.Holder), Term: fs.Lease.Term, Held: fs.Lease.Held(now), Backlog: fs.Backlog, Text: masked(fs.Describe(now))}
	if !fs.Lease.Until.IsZero() {
		u := fs.Lease.Until.UTC()
		v.Until = &u
	}
	return v, nil
}

// stamp names an entry and its last failure's time.
type stamp struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

func newDLQStatsCommand(g *dlqGlobal) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "stats",
		Short: "Count the DLQ's entries by status, severity, class and task; its oldest and newest entry; overflows",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := dlqOutput(c, output); err != nil {
				return err
			}
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			ctx := c.Context()
			st, err := d.store.Stats(ctx)
			if err != nil {
				return err
			}
			v := statsView{Redis: d.target.printable(), Namespace: d.namespace, Total: st.Total, Corrupt: st.Corrupt,
				ByStatus: st.ByStatus, BySeverity: st.BySeverity, ByClass: st.ByClass, ByTask: maskedKeys(st.ByTask),
				Evicted: st.Evicted, Rejected: st.Rejected, Held: st.Held}
			if !st.Oldest.IsZero() {
				v.OldestFailed = &stamp{ID: masked(st.OldestID), At: st.Oldest}
			}
			if !st.HeldOldest.IsZero() {
				v.HeldOldestAt = st.HeldOldest.Format(time.RFC3339Nano)
			}
			if !st.Newest.IsZero() {
				v.Newest = &stamp{ID: masked(st.NewestID), At: st.Newest}
			}
			if v.Leader, err = leaderOf(ctx, d.store, time.Now()); err != nil {
				return err
			}
			w := c.OutOrStdout()
			if output != "table" {
				return writeJSON(w, v, output == "json")
			}
			printStats(w, &v)
			return nil
		},
	}
	addOutputFlag(c, &output)
	return c
}

func maskedKeys(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, n := range m {
		out[masked(k)] += n
	}
	return out
}

func printStats(w io.Writer, v *statsView) {
	fmt.Fprintf(w, "DLQ of namespace %q at %s\n", v.Namespace, v.Redis)
	fmt.Fprintf(w, "  entries     %d (corrupt: %d)\n", v.Total, v.Corrupt)
	fmt.Fprintf(w, "  by status   %s\n", counts(v.ByStatus, []string{"failed", "quarantined", "requeued", "deleted"}))
	fmt.Fprintf(w, "  by severity %s\n", counts(v.BySeverity, []string{"high", "medium", "low"}))
	fmt.Fprintf(w, "  by class    %s\n", counts(v.ByClass, nil))
	fmt.Fprintf(w, "  by task     %s\n", counts(v.ByTask, nil))
	if v.OldestFailed != nil {
		fmt.Fprintf(w, "  oldest failed %s  %s (%s ago)\n", v.OldestFailed.At.Format(time.RFC3339), v.OldestFailed.ID, ago(v.OldestFailed.At))
	} else {
		fmt.Fprintln(w, "  oldest failed -")
	}
	if v.Newest != nil {
		fmt.Fprintf(w, "  newest failed %s  %s (%s ago)\n", v.Newest.At.Format(time.RFC3339), v.Newest.ID, ago(v.Newest.At))
	} else {
		fmt.Fprintln(w, "  newest failed -")
	}
	fmt.Fprintf(w, "  overflow    evicted %d, rejected %d; held %d", v.Evicted, v.Rejected, v.Held)
	if v.HeldOldestAt != "" {
		fmt.Fprintf(w, " (oldest held since %s)", v.HeldOldestAt)
	}
	fmt.Fprintln(w)
	if v.Leader != nil {
		fmt.Fprintf(w, "  leader      %s\n", v.Leader.Text)
	}
}

// counts prints "a 3, b 1": the names of order first, then the others
// sorted; "-" when there are none.
func counts(m map[string]int, order []string) string {
	var parts []string
	for _, k := range order {
		if n, ok := m[k]; ok && n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(order, k) && m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// ago is how long before now t was, printed as the web UI prints it.
func ago(t time.Time) string { return age.Format(time.Since(t)) }

// writeJSON writes v as one JSON document (indented when pretty) or one line.
func writeJSON(w io.Writer, v any, pretty bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// listView is list as --output json prints it.
type listView struct {
	Entries []entryRow `json:"entries"`
	// NextCursor is the --cursor of the next page; "" after the last.
	NextCursor string `json:"next_cursor"`
}

func newDLQListCommand(g *dlqGlobal) *cobra.Command {
	var (
		output, cursor string
		limit          int
		ff             filterFlags
	)
	c := &cobra.Command{
		Use:   "list",
		Short: "List DLQ entries, newest first, a page at a time",
		Long: `list prints the DLQ's entries, newest last failure first, a page at a time:
--limit entries, then the --cursor of the next page (after the table, on stderr with
--output jsonl, as next_cursor with --output json). Filters combine with AND; a flag
given several values (repeated or comma-separated) matches any of them.

The table fits the terminal's width ($COLUMNS, else 120 columns), cutting long
cells with "…"; error texts are masked.`,
		Example: `  faultline dlq list --severity high --task charge
  faultline dlq list --status failed --since 2h --limit 100
  faultline dlq list --output json --cursor 1767225600000:ord-42`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := dlqOutput(c, output); err != nil {
				return err
			}
			if g.isSeed() {
				return g.seedList(c, &ff, output, cursor, limit)
			}
			if limit < 1 || limit > 10_000 {
				return usage(c, fmt.Errorf("--limit must be between 1 and 10000, got %d", limit))
			}
			f, err := ff.filter(c, time.Now())
			if err != nil {
				return err
			}
			if cursor != "" && !validCursor(cursor) {
				return usage(c, fmt.Errorf("--cursor: %q is not a cursor faultline dlq list printed (MILLIS:ID)", masked(cursor)))
			}
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			page, err := d.store.List(c.Context(), f, cursor, limit)
			if err != nil {
				return err
			}
			rows := make([]entryRow, len(page.Entries))
			for i := range page.Entries {
				rows[i] = rowOf(&page.Entries[i])
			}
			if rows == nil {
				rows = []entryRow{}
			}
			return writePage(c, output, rows, listView{Entries: rows, NextCursor: page.Next}, page.Next, printRows)
		},
	}
	addOutputFlag(c, &output)
	ff.add(c)
	c.Flags().IntVar(&limit, "limit", 50, "entries per page")
	c.Flags().StringVar(&cursor, "cursor", "", "where the page starts: the cursor the previous page printed")
	return c
}

// validCursor checks a cursor's shape (MILLIS:ID), so that a mistyped one is
// invalid input rather than an error from the store.
func validCursor(s string) bool {
	n, _, ok := strings.Cut(s, ":")
	_, err := strconv.ParseInt(n, 10, 64)
	return ok && err == nil
}

// writePage writes one page of a list in the --output format: json as
// doc, jsonl a row a line (the next cursor on stderr), a table by print
// (the next cursor after it). The layouts' lists share it.
func writePage[R any](c *cobra.Command, output string, rows []R, doc any, next string, print func(io.Writer, []R, int)) error {
	w := c.OutOrStdout()
	switch output {
	case "json":
		return writeJSON(w, doc, true)
	case "jsonl":
		for _, r := range rows {
			if err := writeJSON(w, r, false); err != nil {
				return err
			}
		}
		if next != "" {
			fmt.Fprintf(c.ErrOrStderr(), "next page: --cursor %s\n", next)
		}
		return nil
	}
	print(w, rows, termWidth())
	if len(rows) == 0 {
		fmt.Fprintln(w, "no entries match")
	}
	if next != "" {
		fmt.Fprintf(w, "next page: --cursor %s\n", next)
	}
	return nil
}

// termWidth is the width a table fits: $COLUMNS when set (bash does not
// export it: a script can say), else the terminal's on standard output,
// else 120; never below minTableWidth.
func termWidth() int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return max(n, minTableWidth)
	}
	if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && w > 0 {
		return max(w, minTableWidth)
	}
	return 120
}

// minTableWidth is the narrowest table printed: below it, columns are not
// cut further (the ID is never cut).
const minTableWidth = 40

// printRows prints rows as a table no wider than width: the widest cells
// are cut with "…" until it fits.
func printRows(w io.Writer, rows []entryRow, width int) {
	head := []string{"ID", "LAST FAILED", "STATUS", "SEVERITY", "CLASS", "TASK", "QUEUE", "ATT", "ERROR"}
	cells := make([][]string, 0, len(rows)+1)
	cells = append(cells, head)
	for _, r := range rows {
		last := "-"
		if !r.LastFailedAt.IsZero() {
			last = r.LastFailedAt.UTC().Format("2006-01-02 15:04:05")
		}
		errText := oneLine(r.Error)
		if r.Corrupt {
			errText = "corrupt: " + oneLine(r.DecodeError)
		}
		cells = append(cells, []string{r.ID, last, r.Status, dash(r.Severity), dash(r.Class), dash(r.Task), dash(r.Queue),
			strconv.Itoa(r.Attempts), dash(errText)})
	}
	widths := make([]int, len(head))
	for _, row := range cells {
		for i, s := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	fitColumns(widths, width)
	var b strings.Builder
	for _, row := range cells {
		b.Reset()
		for i, s := range row {
			if widths[i] == 0 {
				continue // dropped: no room
			}
			s = cut(s, widths[i])
			b.WriteString(s)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s)+2))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// The list table's columns, by index, as fitColumns treats them.
var (
	// shrinkable columns may be cut down to this many runes. The ID is
	// never cut: it is what an operator copies into show or requeue.
	shrinkable = map[int]int{4: 6, 5: 6, 6: 6, 8: 10}
	// dropOrder is the order columns are left out in when cutting is not
	// enough: the least needed first.
	dropOrder = []int{6, 7, 4, 5, 3}
)

// fitColumns narrows widths (two spaces between columns) to fit width:
// first it cuts the widest shrinkable column, then it drops columns
// (width 0) in dropOrder.
func fitColumns(widths []int, width int) {
	total := func() int {
		t := 0
		for _, n := range widths {
			if n > 0 {
				t += n + 2
			}
		}
		return t - 2
	}
	for total() > width {
		widest := -1
		for i, m := range shrinkable {
			if widths[i] > m && (widest < 0 || widths[i] > widths[widest] || widths[i] == widths[widest] && i > widest) {
				widest = i
			}
		}
		if widest < 0 {
			break
		}
		widths[widest] = max(shrinkable[widest], widths[widest]-(total()-width))
	}
	for _, i := range dropOrder {
		if total() <= width {
			return
		}
		widths[i] = 0
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// cut shortens s to n runes, the last one "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// entryView is one entry as show --output json prints it: everything, the
// payload as JSON when it is JSON (masked unless --reveal).
type entryView struct {
	ID             string          `json:"id"`
	Status         string          `json:"status"`
	Corrupt        bool            `json:"corrupt,omitempty"`
	DecodeError    string          `json:"decode_error,omitempty"`
	Raw            string          `json:"raw,omitempty"`
	RawBase64      []byte          `json:"raw_base64,omitempty"`
	Task           string          `json:"task,omitempty"`
	Queue          string          `json:"queue,omitempty"`
	SourceQueue    string          `json:"source_queue,omitempty"`
	Dependency     string          `json:"dependency,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	Attempts       int             `json:"attempts"`
	EnqueuedAt     time.Time       `json:"enqueued_at,omitzero"`
	FirstAttemptAt time.Time       `json:"first_attempt_at,omitzero"`
	FirstFailedAt  time.Time       `json:"first_failed_at,omitzero"`
	LastFailedAt   time.Time       `json:"last_failed_at,omitzero"`
	Verdict        string          `json:"verdict,omitempty"`
	Rule           string          `json:"rule,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	Requeues       int             `json:"requeues,omitempty"`
	AutoRetries    int             `json:"auto_retries,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	// PayloadText is a payload that is not JSON.
	PayloadText string        `json:"payload_text,omitempty"`
	Masked      bool          `json:"masked"`
	History     []failureView `json:"history,omitempty"`
	Changes     []changeView  `json:"changes,omitempty"`
	Superseded  string        `json:"superseded,omitempty"`
}

type failureView struct {
	Attempt   int       `json:"attempt"`
	At        time.Time `json:"at"`
	Error     string    `json:"error"`
	ErrorType string    `json:"error_type,omitempty"`
	Verdict   string    `json:"verdict"`
	Rule      string    `json:"rule,omitempty"`
	Status    int       `json:"http_status,omitempty"`
}

type changeView struct {
	At     time.Time `json:"at"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// viewOf is e as show prints it; reveal leaves payload and texts unmasked.
func viewOf(e *dlq.Entry, reveal bool) entryView {
	mask := masked
	if reveal {
		mask = func(s string) string { return s }
	}
	v := entryView{ID: e.ID(), Masked: !reveal}
	if e.Corrupt {
		v.Status, v.Corrupt, v.DecodeError = "corrupt", true, mask(e.DecodeError)
		if utf8.Valid(e.Raw) {
			v.Raw = mask(string(e.Raw))
		} else {
			v.RawBase64 = e.Raw
		}
		return v
	}
	j := e.Job
	v.Status, v.Task, v.Queue, v.SourceQueue, v.Dependency = e.Status.String(), j.Task, j.QueueName(), e.SourceQueue, j.Dependency
	v.IdempotencyKey, v.Attempts, v.EnqueuedAt, v.FirstAttemptAt = mask(j.IdempotencyKey), j.Attempts, j.EnqueuedAt, j.FirstAttemptAt
	v.FirstFailedAt, v.LastFailedAt, v.Verdict, v.Rule = e.FirstFailedAt, e.LastFailedAt, e.Verdict.String(), e.Verdict.Rule
	v.Reason, v.Requeues, v.AutoRetries = mask(e.Reason), e.Requeues, e.AutoRetries
	v.Payload, v.PayloadText = payloadOf(j.Payload, reveal)
	for _, f := range e.History {
		v.History = append(v.History, failureView{Attempt: f.Attempt, At: f.At, Error: mask(f.Error), ErrorType: f.ErrorType,
			Verdict: f.Verdict.String(), Rule: f.Verdict.Rule, Status: f.Verdict.Status})
	}
	for _, ch := range e.Changes {
		cv := changeView{At: ch.At, To: ch.To.String(), By: mask(ch.By), Reason: mask(ch.Reason)}
		if ch.From != 0 {
			cv.From = ch.From.String()
		}
		v.Changes = append(v.Changes, cv)
	}
	if len(e.Superseded) > 0 {
		v.Superseded = mask(string(e.Superseded))
	}
	return v
}

// payloadOf returns a JSON payload indented (secrets masked by the
// redactor unless reveal), or a payload that is not JSON as text.
func payloadOf(p []byte, reveal bool) (json.RawMessage, string) {
	if len(p) == 0 {
		return nil, ""
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		if reveal {
			return nil, string(p)
		}
		return nil, masked(string(p))
	}
	if !reveal {
		v = redact.Default().Value(v)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, masked(string(p))
	}
	return out, ""
}

func newDLQShowCommand(g *dlqGlobal) *cobra.Command {
	var (
		output string
		reveal bool
	)
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one DLQ entry whole: the job, its payload, every failed attempt, its status history",
		Long: `show prints one entry: the job's fields, its payload (pretty JSON, secrets masked
unless --reveal), every failed attempt with its error and classification, and every
change of its status (who, when, why). An entry whose stored bytes do not decode is
shown as corrupt, with the decode error and its bytes.`,
		Example: `  faultline dlq show ord-42
  faultline dlq show ord-42 --output json --reveal`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(c, fmt.Errorf("show takes one entry ID, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if err := dlqOutput(c, output); err != nil {
				return err
			}
			if g.isSeed() {
				return g.seedShow(c, args[0], output, reveal)
			}
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			e, err := d.store.Get(c.Context(), args[0])
			if errors.Is(err, dlq.ErrNotFound) {
				return d.notFound(c, args[0])
			}
			if err != nil {
				return err
			}
			v := viewOf(&e, reveal)
			w := c.OutOrStdout()
			if output != "table" {
				return writeJSON(w, v, output == "json")
			}
			printEntry(w, &v)
			return nil
		},
	}
	addOutputFlag(c, &output)
	c.Flags().BoolVar(&reveal, "reveal", false, "show the payload and error texts unmasked (secrets included)")
	return c
}

func printEntry(w io.Writer, v *entryView) {
	if v.Corrupt {
		fmt.Fprintf(w, "entry %s: CORRUPT (its stored bytes do not decode: %s)\n", v.ID, v.DecodeError)
		if v.RawBase64 != nil {
			fmt.Fprintf(w, "raw bytes (%d, not UTF-8, hex):\n%x\n", len(v.RawBase64), v.RawBase64)
		} else {
			fmt.Fprintf(w, "raw bytes (%d):\n%s\n", len(v.Raw), v.Raw)
		}
		return
	}
	t := func(x time.Time) string {
		if x.IsZero() {
			return "-"
		}
		return x.Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "entry %s: %s\n", v.ID, v.Status)
	fmt.Fprintf(w, "  task          %s\n", dash(v.Task))
	fmt.Fprintf(w, "  queue         %s (dead-lettered from %s)\n", v.Queue, dash(v.SourceQueue))
	fmt.Fprintf(w, "  dependency    %s\n", dash(v.Dependency))
	fmt.Fprintf(w, "  idempotency   %s\n", dash(v.IdempotencyKey))
	fmt.Fprintf(w, "  attempts      %d (requeues %d, auto-retries %d)\n", v.Attempts, v.Requeues, v.AutoRetries)
	fmt.Fprintf(w, "  enqueued      %s\n", t(v.EnqueuedAt))
	fmt.Fprintf(w, "  first failed  %s\n", t(v.FirstFailedAt))
	fmt.Fprintf(w, "  last failed   %s\n", t(v.LastFailedAt))
	fmt.Fprintf(w, "  verdict       %s (rule %s)\n", v.Verdict, dash(v.Rule))
	fmt.Fprintf(w, "  reason        %s\n", dash(v.Reason))
	note := " (secrets masked; --reveal shows them)"
	if !v.Masked {
		note = " (unmasked)"
	}
	switch {
	case v.Payload != nil:
		fmt.Fprintf(w, "payload%s:\n%s\n", note, indent(string(v.Payload)))
	case v.PayloadText != "":
		fmt.Fprintf(w, "payload, not JSON%s:\n%s\n", note, indent(v.PayloadText))
	default:
		fmt.Fprintln(w, "payload: none")
	}
	fmt.Fprintf(w, "attempts (%d):\n", len(v.History))
	for _, f := range v.History {
		typ := ""
		if f.ErrorType != "" {
			typ = " " + f.ErrorType
		}
		fmt.Fprintf(w, "  #%d  %s  %s (rule %s)%s\n      %s\n", f.Attempt, t(f.At), f.Verdict, dash(f.Rule), typ, oneLine(f.Error))
	}
	fmt.Fprintf(w, "status history (%d):\n", len(v.Changes))
	for _, ch := range v.Changes {
		line := fmt.Sprintf("  %s  %s → %s", t(ch.At), dash(ch.From), ch.To)
		if ch.By != "" {
			line += "  by " + ch.By
		}
		if ch.Reason != "" {
			line += "  (" + ch.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	if v.Superseded != "" {
		fmt.Fprintf(w, "superseded bytes (an undecodable entry this one replaced):\n%s\n", indent(v.Superseded))
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
