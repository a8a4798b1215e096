package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/ui"
)

// seedStatuses are the statuses the tutorial's entries carry (an entry of
// a dlq:* list has none and reads as "failed").
var seedStatuses = []string{"failed", seed.Reprocessing, "deleted"}

// seedRefDigest is how many hex digits of the SHA-256 of an entry's bytes a
// ref carries.
const seedRefDigest = ui.SeedRefDigest

func addLayoutFlags(pf *pflag.FlagSet, g *dlqGlobal) {
	pf.StringVar(&g.layout, "layout", layout.PresetFaultline, "the DLQ's layout: "+layout.PresetFaultline+
		" (this tool's store), or "+layout.PresetSeed+" (the tutorial's dead_letter and dlq:* lists: list, show, requeue)")
	pf.StringVar(&g.prefix, "prefix", "", "the seed layout's key prefix, with --layout seed and migrate --from-layout seed (default none: dead_letter, dlq:*, default)")
}

// isSeed says --layout seed was asked for.
func (g *dlqGlobal) isSeed() bool { return g.layout == layout.PresetSeed }

// faultlineLayout refuses a --layout other than faultline's, and --prefix
// without the seed layout, for a command that works on faultline's layout.
func (g *dlqGlobal) faultlineLayout(c *cobra.Command) error {
	switch g.layout {
	case layout.PresetFaultline:
		if c.Flags().Changed("prefix") && c.Name() != "migrate" {
			return usage(c, errors.New("--prefix names the seed layout's keys: it goes with --layout seed (faultline's layout is chosen with --namespace)"))
		}
		return nil
	case layout.PresetSeed:
		return usage(c, fmt.Errorf("--layout seed: %s works on faultline's layout only; with --layout seed there are list, show and requeue, and faultline dlq migrate --from-layout seed moves the DLQ into faultline's layout", c.CommandPath()))
	}
	return usage(c, fmt.Errorf("--layout: unknown value %q (allowed: %s)", masked(g.layout), strings.Join(layout.Presets, ", ")))
}

// seedConn is an open seed DLQ.
type seedConn struct {
	rdb    *redis.Client
	target redisTarget
	prefix string
	// audit is faultline's store of the namespace whose audit stream
	// records the moves (--namespace, on the same Redis); nil where
	// nothing is moved (list, show).
	audit *dlqConn
}

// openSeed connects to the Redis holding the seed DLQ, to read it.
func (g *dlqGlobal) openSeed(c *cobra.Command) (*seedConn, error) { return g.openSeedAs(c, false) }

// openSeedAs connects to the Redis holding the seed DLQ; withAudit opens
// the --namespace store too, for its audit stream (requeue), and lets
// --namespace name it.
func (g *dlqGlobal) openSeedAs(c *cobra.Command, withAudit bool) (*seedConn, error) {
	if c.Flags().Changed("namespace") && !withAudit {
		return nil, usage(c, errors.New("--namespace names a namespace of faultline's layout; the seed layout's keys are chosen with --prefix"))
	}
	var cfg store.Config
	if withAudit {
		cfg = store.Config{Namespace: g.namespace}
		if err := cfg.Validate(); err != nil {
			return nil, usage(c, fmt.Errorf("--namespace %q (the namespace whose audit stream records a seed requeue): %w", masked(g.namespace), err))
		}
	}
	t, client, err := g.connect(c)
	if err != nil {
		return nil, err
	}
	s := &seedConn{rdb: client, target: t, prefix: g.prefix}
	if withAudit {
		st, err := redisstore.New(client, cfg)
		if err != nil {
			_ = client.Close()
			return nil, usage(c, err)
		}
		s.audit = &dlqConn{store: st, rdb: client, target: t, namespace: cfg.WithDefaults().Namespace, close: func() {}}
	}
	return s, nil
}

// record writes r into the audit stream of the --namespace the seed
// connection was opened with (dlqConn.record: a failure is said on
// stderr, and a bulk move refuses to start without its "started" record).
func (s *seedConn) record(c *cobra.Command, r dlq.AuditRecord) error {
	if s.audit == nil {
		return fmt.Errorf("audit %s: no audit stream opened", r.Action)
	}
	if r.Note == "" {
		r.Note = s.where()
	} else {
		r.Note = s.where() + ": " + r.Note
	}
	return s.audit.record(c, r)
}

// seedFilterSpec names f for an audit record, as the flags that made it.
func seedFilterSpec(f seed.Filter) string {
	parts := []string{"--layout seed"}
	if len(f.Lists) > 0 {
		parts = append(parts, "lists "+strings.Join(f.Lists, ","))
	}
	if len(f.Severities) > 0 {
		parts = append(parts, "--severity "+strings.Join(f.Severities, ","))
	}
	if len(f.Statuses) > 0 {
		parts = append(parts, "--status "+strings.Join(f.Statuses, ","))
	}
	if f.Text != "" {
		parts = append(parts, "--error-text "+strconv.Quote(masked(f.Text)))
	}
	return strings.Join(parts, " ")
}

// where names the seed DLQ for messages.
func (s *seedConn) where() string {
	if s.prefix == "" {
		return "the seed DLQ at " + s.target.printable()
	}
	return fmt.Sprintf("the seed DLQ (prefix %q) at %s", masked(s.prefix), s.target.printable())
}

// seedFilter maps the filter flags onto the seed layout's filter; flags the
// seed layout cannot apply are refused, named.
func seedFilter(c *cobra.Command, ff *filterFlags) (seed.Filter, error) {
	var no []string
	for _, x := range []struct {
		name string
		set  bool
	}{{"--task", len(ff.tasks) > 0}, {"--class", len(ff.classes) > 0}, {"--error-type", len(ff.errorTypes) > 0},
		{"--since", ff.since != ""}, {"--until", ff.until != ""}} {
		if x.set {
			no = append(no, x.name)
		}
	}
	if len(no) > 0 {
		return seed.Filter{}, usage(c, fmt.Errorf("%s: not available with --layout seed (its filters: --severity, --status, --error-text)", strings.Join(no, ", ")))
	}
	f := seed.Filter{Text: ff.text}
	for _, s := range ff.severities {
		v, err := classify.ParseSeverity(strings.TrimSpace(s))
		if err != nil {
			return f, usage(c, fmt.Errorf("--severity: %w", err))
		}
		f.Severities = append(f.Severities, v.String())
	}
	for _, s := range ff.statuses {
		s = strings.ToLower(strings.TrimSpace(s))
		if !slices.Contains(seedStatuses, s) {
			return f, usage(c, fmt.Errorf("--status: unknown status %q of the seed layout (allowed: %s)", masked(s), strings.Join(seedStatuses, ", ")))
		}
		f.Statuses = append(f.Statuses, s)
	}
	return f, nil
}

// seedRow is a seed entry as list prints it: the web UI's row, one
// rendering for both tools.
type seedRow = ui.SeedRow

func seedDigest(b []byte) string { return seed.Digest(b)[:seedRefDigest] }

// seedRefOf and seedRowOf are the web UI's (ui.SeedRefOf, ui.SeedRowOf).
var (
	seedRefOf = ui.SeedRefOf
	seedRowOf = ui.SeedRowOf
)

// seedListView is list --layout seed as --output json prints it.
type seedListView struct {
	Entries    []seedRow `json:"entries"`
	NextCursor string    `json:"next_cursor"`
	Scanned    int       `json:"scanned"`
}

func (g *dlqGlobal) seedList(c *cobra.Command, ff *filterFlags, output, cursor string, limit int) error {
	if limit < 1 || limit > seed.MaxLimit {
		return usage(c, fmt.Errorf("--limit must be between 1 and %d with --layout seed, got %d", seed.MaxLimit, limit))
	}
	f, err := seedFilter(c, ff)
	if err != nil {
		return err
	}
	s, err := g.openSeed(c)
	if err != nil {
		return err
	}
	defer func() { _ = s.rdb.Close() }()
	page, err := seed.List(c.Context(), s.rdb, s.prefix, f, cursor, limit)
	if errors.Is(err, seed.ErrCursor) {
		return usage(c, fmt.Errorf("--cursor: %q is not a cursor faultline dlq list --layout seed printed", masked(cursor)))
	}
	if err != nil {
		return err
	}
	rows := make([]seedRow, len(page.Entries))
	for i := range page.Entries {
		rows[i] = seedRowOf(s.prefix, &page.Entries[i])
	}
	return writePage(c, output, rows, seedListView{Entries: rows, NextCursor: page.Next, Scanned: page.Scanned}, page.Next, printSeedRows)
}

// printSeedRows prints rows as a table no wider than width: ERROR, then
// TASK are cut with "…", then JOB and SEVERITY left out.
func printSeedRows(w io.Writer, rows []seedRow, width int) {
	const errCol, taskCol, jobCol, sevCol = 6, 3, 4, 2
	cells := [][]string{{"REF", "STATUS", "SEVERITY", "TASK", "JOB", "RETRIES", "ERROR"}}
	for _, r := range rows {
		st, e := r.Status, oneLine(r.Error)
		if r.Corrupt {
			st, e = "CORRUPT", "corrupt: "+r.Invalid
		}
		cells = append(cells, []string{r.Ref, st, dash(r.Severity), dash(r.Task), dash(r.JobID), strconv.Itoa(r.Retries), dash(e)})
	}
	widths := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, s := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	total := func() int {
		t := -2
		for _, n := range widths {
			if n > 0 {
				t += n + 2
			}
		}
		return t
	}
	for _, s := range []struct{ col, min int }{{errCol, 10}, {taskCol, 6}} {
		if over := total() - width; over > 0 {
			widths[s.col] = max(s.min, widths[s.col]-over)
		}
	}
	for _, col := range []int{jobCol, sevCol} {
		if total() > width {
			widths[col] = 0
		}
	}
	var b strings.Builder
	for _, row := range cells {
		b.Reset()
		for i, s := range row {
			if widths[i] == 0 {
				continue
			}
			s = cut(s, widths[i])
			b.WriteString(s)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s)+2))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// seedRef is a parsed REF: LIST@POSITION[#DIGEST].
type seedRef struct {
	list   string
	pos    int64
	digest string
}

func (r seedRef) String() string {
	s := r.list + "@" + strconv.FormatInt(r.pos, 10)
	if r.digest != "" {
		s += "#" + r.digest
	}
	return s
}

// parseSeedRef reads a ref as list printed it; needDigest refuses one
// without its #DIGEST.
func parseSeedRef(c *cobra.Command, s string, needDigest bool) (seedRef, error) {
	bad := func(why string) (seedRef, error) {
		return seedRef{}, usage(c, fmt.Errorf("REF %q: %s; a REF is LIST@POSITION#DIGEST as faultline dlq list --layout seed prints it (e.g. dead_letter@12#%s)",
			masked(s), why, strings.Repeat("0", seedRefDigest)))
	}
	rest, digest, hasDigest := strings.Cut(s, "#")
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return bad("no @POSITION")
	}
	r := seedRef{list: rest[:at], digest: strings.ToLower(digest)}
	lists := append([]string{layout.SeedDeadLetter}, layout.SeedSeverityLists...)
	if !slices.Contains(lists, r.list) {
		return bad("no list " + strconv.Quote(r.list) + " in the seed layout (" + strings.Join(lists, ", ") + ")")
	}
	p, err := strconv.ParseInt(rest[at+1:], 10, 64)
	if err != nil || p < 0 {
		return bad("the position is not a number from 0")
	}
	r.pos = p
	if hasDigest {
		if _, err := hex.DecodeString(r.digest); err != nil || len(r.digest) != seedRefDigest {
			return bad("the digest is not " + strconv.Itoa(seedRefDigest) + " hex digits")
		}
	} else if needDigest {
		return bad("no #DIGEST, which is how a requeue knows the entry is still the one listed")
	}
	return r, nil
}

// get reads the entry r names, by its position and digest (seed.Get: one
// LINDEX, and a bounded look below the position when a trim moved it).
func (s *seedConn) get(ctx context.Context, r seedRef) (seed.Entry, seed.Where, error) {
	e, where, err := seed.Get(ctx, s.rdb, s.prefix, r.list, r.pos, r.digest)
	if err != nil {
		return seed.Entry{}, 0, fmt.Errorf("read %s: %w", r, err)
	}
	return e, where, nil
}

// seedEntryView is show --layout seed as --output json prints it.
type seedEntryView struct {
	seedRow
	// Entry is the whole entry, indented (secrets masked unless --reveal).
	Entry json.RawMessage `json:"entry,omitempty"`
	// Raw holds a corrupt entry's bytes (RawBase64 when not UTF-8).
	Raw       string `json:"raw,omitempty"`
	RawBase64 []byte `json:"raw_base64,omitempty"`
	Masked    bool   `json:"masked"`
	// Changed says the entry at the position is not the one the ref's
	// digest names.
	Changed bool `json:"changed_since_listed,omitempty"`
	// MovedFrom is the ref asked for when the entry was found below its
	// position (the list was trimmed since it was listed).
	MovedFrom string `json:"moved_from,omitempty"`
	// Restatused says the entry is the one the ref names, with its status
	// changed since it was listed (the tutorial marks entries in place).
	Restatused bool `json:"status_changed_since_listed,omitempty"`
}

func (g *dlqGlobal) seedShow(c *cobra.Command, ref, output string, reveal bool) error {
	r, err := parseSeedRef(c, ref, false)
	if err != nil {
		return err
	}
	s, err := g.openSeed(c)
	if err != nil {
		return err
	}
	defer func() { _ = s.rdb.Close() }()
	e, where, err := s.get(c.Context(), r)
	if err != nil {
		return err
	}
	if where == seed.Gone {
		return usage(c, fmt.Errorf("no entry at %s in %s", r, s.where()))
	}
	mask := masked
	if reveal {
		mask = func(s string) string { return s }
	}
	v := seedEntryView{seedRow: seedRowOf(s.prefix, &e), Masked: !reveal}
	v.Changed = where == seed.ChangedAt
	if where == seed.Moved || where == seed.Restatused && e.Position != r.pos {
		v.MovedFrom = r.String()
	}
	v.Restatused = where == seed.Restatused
	if e.Invalid != "" {
		if utf8.Valid(e.Bytes) {
			v.Raw = mask(string(e.Bytes))
		} else {
			v.RawBase64 = e.Bytes
		}
	} else {
		pj, text := payloadOf(e.Bytes, reveal)
		v.Entry = pj
		if pj == nil {
			v.Raw = text
		}
	}
	w := c.OutOrStdout()
	if v.Changed {
		fmt.Fprintf(c.ErrOrStderr(), "note: the entry at %s@%d is not the one %s names (changed since listed); showing the one there now, %s\n",
			r.list, r.pos, r, v.Ref)
	}
	if v.Restatused {
		fmt.Fprintf(c.ErrOrStderr(), "note: the entry %s names is now %s (its status changed since it was listed)\n", r, v.Status)
	}
	if v.MovedFrom != "" {
		fmt.Fprintf(c.ErrOrStderr(), "note: the entry %s names has moved to %s (the list was trimmed since it was listed)\n", r, v.Ref)
	}
	if output != "table" {
		return writeJSON(w, v, output == "json")
	}
	if v.Corrupt {
		fmt.Fprintf(w, "entry %s: CORRUPT (%s)\n", v.Ref, v.Invalid)
		fmt.Fprintf(w, "  list          %s, position %d from the tail\n", v.List, v.Position)
		if v.RawBase64 != nil {
			fmt.Fprintf(w, "raw bytes (%d, not UTF-8, hex):\n%x\n", len(v.RawBase64), v.RawBase64)
		} else {
			fmt.Fprintf(w, "raw bytes (%d):\n%s\n", len(e.Bytes), v.Raw)
		}
		return nil
	}
	fmt.Fprintf(w, "entry %s: %s\n", v.Ref, v.Status)
	fmt.Fprintf(w, "  list          %s, position %d from the tail\n", v.List, v.Position)
	fmt.Fprintf(w, "  task          %s\n", dash(v.Task))
	fmt.Fprintf(w, "  job ID        %s\n", dash(v.JobID))
	fmt.Fprintf(w, "  severity      %s\n", dash(v.Severity))
	fmt.Fprintf(w, "  retries       %d\n", v.Retries)
	fmt.Fprintf(w, "  failed at     %s\n", dash(v.FailedAt))
	fmt.Fprintf(w, "  error         %s%s\n", dash(oneLine(mask(e.Parsed.Error))), typeSuffix(v.ErrorType))
	note := " (secrets masked; --reveal shows them)"
	if reveal {
		note = " (unmasked)"
	}
	if v.Entry != nil {
		fmt.Fprintf(w, "entry%s:\n%s\n", note, indent(string(v.Entry)))
	} else {
		fmt.Fprintf(w, "entry%s:\n%s\n", note, indent(v.Raw))
	}
	return nil
}

func typeSuffix(t string) string {
	if t == "" {
		return ""
	}
	return " (" + t + ")"
}

// seedRequeueFlags are requeue's flags as the seed layout takes them.
type seedRequeueFlags struct {
	all, reset   bool
	to, output   string
	by           string // who acts, for the audit record
	batch, shown int
	ff           *filterFlags
	cf           confirmation
}

func (g *dlqGlobal) seedRequeue(c *cobra.Command, args []string, fl seedRequeueFlags) error {
	if fl.reset {
		return usage(c, errors.New("--reset-attempts: not available with --layout seed (the tutorial sends the job back as it is)"))
	}
	if fl.batch < 1 || fl.batch > 10_000 {
		return usage(c, fmt.Errorf("--batch must be between 1 and 10000, got %d", fl.batch))
	}
	var refs []seedRef
	for _, a := range args {
		r, err := parseSeedRef(c, a, true)
		if err != nil {
			return err
		}
		refs = append(refs, r)
	}
	f, err := seedFilter(c, fl.ff)
	if err != nil {
		return err
	}
	s, err := g.openSeedAs(c, true)
	if err != nil {
		return err
	}
	defer func() { _ = s.rdb.Close() }()
	opts := seed.RequeueOptions{To: fl.to, Batch: fl.batch}
	fl.by = g.actor()
	if fl.all {
		return s.requeueAll(c, f, opts, fl)
	}
	return s.requeueRefs(c, refs, opts, fl)
}

// workList is the list a requeue sends jobs to, prefix included.
func (s *seedConn) workList(opts seed.RequeueOptions) string {
	if opts.To != "" {
		return s.prefix + opts.To
	}
	return layout.Inject{Preset: layout.PresetSeed, Prefix: s.prefix}.Resolved().RedisList.Key
}

// requeueRefs requeues the entries refs name, each only if it is still the
// one listed.
func (s *seedConn) requeueRefs(c *cobra.Command, refs []seedRef, opts seed.RequeueOptions, fl seedRequeueFlags) error {
	ctx, w := c.Context(), c.OutOrStdout()
	sum := requeueSummary{DryRun: fl.cf.dryRun, Stated: len(refs), Reasons: map[string]int{}}
	if !fl.cf.dryRun {
		ok, err := fl.cf.ask(c, fmt.Sprintf("requeue %d %s of %s onto %s", len(refs), plural(len(refs), "entry", "entries"), s.where(), s.workList(opts)))
		if err != nil || !ok {
			return err
		}
		ids := make([]string, len(refs))
		for i, r := range refs {
			ids[i] = r.String()
		}
		defer func() {
			_ = s.record(c, dlq.AuditRecord{By: fl.by, Action: "requeue", IDs: ids, Stated: sum.Stated,
				Moved: sum.Moved, Skipped: sum.Skipped, Note: "onto " + s.workList(opts)})
		}()
	}
	for _, r := range refs {
		e, where, err := s.get(ctx, r)
		if err != nil {
			return fmt.Errorf("requeue %s (after %d moved): %w", r, sum.Moved, err)
		}
		var o seed.Outcome
		switch {
		case where == seed.Gone:
			o = seed.NotFound
		case where == seed.ChangedAt:
			o = seed.Changed
		case where == seed.Restatused && e.Status() == seed.Reprocessing:
			o = seed.AlreadyReprocessing
		case where == seed.Restatused:
			o = seed.Changed // marked deleted (or otherwise) since listed
		case e.Invalid != "":
			o = seed.NotRequeueable
		case fl.cf.dryRun && e.Status() == seed.Reprocessing:
			o = seed.AlreadyReprocessing
		case fl.cf.dryRun:
			sum.Would++
			if fl.output == "table" {
				row := seedRowOf(s.prefix, &e)
				fmt.Fprintf(w, "would requeue %s (%s, %s) onto %s\n", r, row.Status, dash(row.Task), s.workList(opts))
			}
			continue
		default:
			if o, err = seed.Requeue(ctx, s.rdb, s.prefix, e.Ref(), opts); err != nil {
				return fmt.Errorf("requeue %s (after %d moved): %w", r, sum.Moved, err)
			}
		}
		if o == seed.Requeued {
			sum.Moved++
		} else {
			sum.Skipped++
			sum.Reasons[o.String()]++
		}
		if fl.output == "table" {
			if fl.cf.dryRun {
				fmt.Fprintf(w, "would skip %s: %s\n", r, o)
			} else {
				fmt.Fprintf(w, "%s: %s\n", r, o)
			}
		}
	}
	if err := printSummary(w, &sum, fl.output); err != nil {
		return err
	}
	if n := sum.Reasons[seed.NotFound.String()]; n > 0 {
		return usage(c, fmt.Errorf("%d of the %d refs %s no entry in %s", n, len(refs), plural(n, "names", "name"), s.where()))
	}
	return nil
}

// requeueAll requeues every entry f selects: counted first (the count the
// operator confirms, with the cut-off taken then), then moved in batches,
// only among the entries that count saw: an entry dead-lettered while the
// prompt is open is left for another run.
func (s *seedConn) requeueAll(c *cobra.Command, f seed.Filter, opts seed.RequeueOptions, fl seedRequeueFlags) error {
	ctx, w := c.Context(), c.OutOrStdout()
	dry := opts
	dry.DryRun = true
	count, err := seed.RequeueAll(ctx, s.rdb, s.prefix, f, dry)
	if err != nil {
		return err
	}
	// Stated is every entry the filter matched; those the count already
	// knows will not move (reprocessing, corrupt) are skipped with their
	// reason.
	sum := requeueSummary{DryRun: fl.cf.dryRun, Stated: count.Matched, Reasons: map[string]int{}}
	if fl.cf.dryRun {
		sum.Would = count.Requeued
		addSeedReasons(&sum, count)
		if fl.output == "table" && fl.shown > 0 && count.Matched > 0 {
			page, err := seed.List(ctx, s.rdb, s.prefix, f, "", min(fl.shown, seed.MaxLimit))
			if err != nil {
				return err
			}
			rows := make([]seedRow, len(page.Entries))
			for i := range page.Entries {
				rows[i] = seedRowOf(s.prefix, &page.Entries[i])
			}
			printSeedRows(w, rows, termWidth())
			if count.Matched > len(rows) {
				fmt.Fprintf(w, "… and %d more\n", count.Matched-len(rows))
			}
		}
		return printSummary(w, &sum, fl.output)
	}
	if count.Requeued == 0 {
		addSeedReasons(&sum, count)
		return printSummary(w, &sum, fl.output)
	}
	ok, err := fl.cf.ask(c, fmt.Sprintf("requeue %d %s (of %d matching, among the %d entries there now) of %s onto %s", count.Requeued,
		plural(count.Requeued, "entry", "entries"), count.Matched, count.Cutoff.Count(), s.where(), s.workList(opts)))
	if err != nil || !ok {
		return err
	}
	opts.Cutoff = &count.Cutoff
	audit := dlq.AuditRecord{By: fl.by, Action: "requeue", Phase: "started", Filter: seedFilterSpec(f),
		Stated: count.Matched, Note: "onto " + s.workList(opts)}
	if err := s.record(c, audit); err != nil {
		return fmt.Errorf("requeue --all: nothing moved: %w", err)
	}
	res, err := seed.RequeueAll(ctx, s.rdb, s.prefix, f, opts)
	seedOutcome(&sum, res, count, s.prefix)
	audit.Phase, audit.At, audit.Moved, audit.Skipped = "done", time.Time{}, sum.Moved, sum.Skipped
	if len(res.CutoffLost) > 0 {
		audit.Note += "; skipped whole, cut-off not found: " + strings.Join(trimPrefixes(s.prefix, res.CutoffLost), ", ")
	}
	if err != nil {
		audit.Phase, audit.Note = "failed", audit.Note+": "+masked(err.Error())
		_ = s.record(c, audit)
		_ = printSummary(w, &sum, fl.output)
		return fmt.Errorf("requeue --all (after %d moved): %w", res.Requeued, err)
	}
	_ = s.record(c, audit)
	if err := printSummary(w, &sum, fl.output); err != nil {
		return err
	}
	for _, k := range res.CutoffLost {
		fmt.Fprintf(c.ErrOrStderr(), "warning: %s skipped whole: the newest entry counted in it (its cut-off) was not found within %d entries below its place (trimmed away or changed since the count); nothing in it was moved — run requeue --all again to count it anew\n",
			strings.TrimPrefix(k, s.prefix), seed.CutoffScan)
	}
	if fl.output == "table" && res.Matched > sum.Stated {
		fmt.Fprintf(w, "note: %d more matched than were counted: entries counted changed to match the filter before the run\n", res.Matched-sum.Stated)
	}
	return nil
}

// seedOutcome fills sum from what a run did, against the count it states:
// moved, the skipped by reason, those counted in a list the run skipped
// whole because it could not find its cut-off ("cut-off-not-found in
// LIST"), and those counted that no longer matched (changed, or trimmed
// away) when the run reached them.
func seedOutcome(sum *requeueSummary, res, count seed.BulkResult, prefix string) {
	sum.Moved, sum.Batches = res.Requeued, res.Batches
	addSeedReasons(sum, res)
	lost := 0
	for _, k := range res.CutoffLost {
		n := count.MatchedByList[k]
		lost += n
		if n > 0 {
			sum.Reasons["cut-off-not-found in "+strings.TrimPrefix(k, prefix)] += n
			sum.Skipped += n
		}
	}
	if gone := sum.Stated - res.Matched - lost; gone > 0 {
		sum.Reasons["no-longer-matching"] += gone
		sum.Skipped += gone
	}
}

// trimPrefixes returns keys without prefix.
func trimPrefixes(prefix string, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.TrimPrefix(k, prefix)
	}
	return out
}

func addSeedReasons(sum *requeueSummary, r seed.BulkResult) {
	for _, x := range []struct {
		o seed.Outcome
		n int
	}{{seed.AlreadyReprocessing, r.AlreadyReprocessing}, {seed.Changed, r.Changed}, {seed.NotFound, r.NotFound}, {seed.NotRequeueable, r.NotRequeueable}, {seed.DeletedInSeed, r.DeletedInSeed}} {
		if x.n > 0 {
			sum.Reasons[x.o.String()] += x.n
			sum.Skipped += x.n
		}
	}
}

// migrateView is what migrate prints with --output json.
type migrateView struct {
	DryRun    bool   `json:"dry_run"`
	From      string `json:"from"`
	Namespace string `json:"namespace"`
	Seen      int    `json:"seen"`
	// Migrated were written now (Corrupt of them kept as corrupt entries
	// with their bytes); Already were migrated by an earlier run; Left
	// could not be written and are still only in the seed lists.
	Migrated int `json:"migrated"`
	Created  int `json:"created"`
	Merged   int `json:"merged"`
	Corrupt  int `json:"corrupt"`
	Already  int `json:"already_migrated"`
	// Deleted were soft-deleted after their add: the seed marked them
	// reprocessing or deleted.
	Deleted int `json:"soft_deleted"`
	// Gone were marked reprocessing or deleted in the seed after their
	// migration, their faultline entry purged or evicted since; Superseded
	// the same, their job failed again since (left failed).
	Gone       int `json:"gone"`
	Superseded int `json:"superseded"`
	// Shifts counts the times a list moved under the run (trimmed) and it
	// found its place again.
	Shifts  int         `json:"shifts"`
	Evicted []string    `json:"evicted,omitempty"`
	Left    []seed.Left `json:"left,omitempty"`
	LeftN   int         `json:"left_count"`
}

func newDLQMigrateCommand(g *dlqGlobal) *cobra.Command {
	var (
		from, output string
		dryRun       bool
		cf           confirmation
	)
	c := &cobra.Command{
		Use:   "migrate --from-layout seed",
		Short: "Move a DLQ written in the tutorial's layout into faultline's (the namespace's DLQ), losing nothing; rerunnable",
		Long: `migrate copies every entry of the seed layout's lists (dead_letter, dlq:low,
dlq:medium, dlq:high, after --prefix) into the DLQ of --namespace, oldest first. An entry
with a job ID becomes (or joins) the faultline entry of that ID; one without gets a stable
ID from its content and its occurrence, so two byte-identical entries stay two. A corrupt
entry is kept as a corrupt entry with its bytes. Entries the seed marked reprocessing or
deleted are migrated soft-deleted (restore brings one back).

The seed lists are left as they were. Every entry migrated is recorded in a marker hash
of the target namespace (PREFIX` + seed.MarkerBase + `NAMESPACE), so a rerun, or a run after
an interrupted one, migrates only what is new and never writes an entry twice, and the
same lists migrate whole into each namespace they are migrated into. An entry the seed
marks reprocessing or deleted after it was migrated is soft-deleted by the next run, but
only while its faultline entry is still the one migrated: one purged or evicted from the
namespace since is counted gone, one whose job failed again since (a later failure in its
history) is left failed and counted superseded; both are recorded as done.

A list the seed's code trims while migrate runs (LPUSH then LTRIM of a full dlq:* list,
dropping the oldest) is followed: migrate finds its place again by the last entries it
processed, so no entry there before the run and still there after it is skipped; a list
that keeps moving under it stops the run with an error (rerun it).

Limit: byte-identical entries of one list are told apart only by their order. If such
entries were migrated and the seed's trim then drops the oldest of them while as many
identical ones are pushed (the same job failing the same way within one timestamp
microsecond, or entries without a timestamp), the list reads as before and a rerun counts
the new ones as already migrated: they are not migrated. Entries that differ in any byte
are never affected.

It asks before migrating on a terminal; a script passes --yes.`,
		Example: `  faultline dlq migrate --from-layout seed --dry-run
  faultline dlq migrate --from-layout seed --prefix app: --namespace default --yes`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return usage(c, fmt.Errorf("--output: unknown value %q (allowed: table, json)", masked(output)))
			}
			if from != layout.PresetSeed {
				return usage(c, fmt.Errorf("--from-layout: unknown value %q (allowed: %s)", masked(from), layout.PresetSeed))
			}
			if g.layout != layout.PresetFaultline {
				return usage(c, fmt.Errorf("--layout %q: migrate writes faultline's layout; --from-layout names the layout it reads", masked(g.layout)))
			}
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			ctx := c.Context()
			v := migrateView{DryRun: dryRun, Namespace: d.namespace}
			src := &seedConn{rdb: d.rdb, target: d.target, prefix: g.prefix}
			v.From = src.where()
			var migErr error
			if dryRun {
				if err := src.migratePlan(ctx, d.namespace, &v); err != nil {
					return err
				}
			} else {
				ok, err := cf.ask(c, fmt.Sprintf("migrate %s into namespace %q", v.From, d.namespace))
				if err != nil || !ok {
					return err
				}
				rec := dlq.AuditRecord{By: g.actor(), Action: "migrate", Phase: "started", Note: "from " + v.From}
				if err := d.record(c, rec); err != nil {
					return fmt.Errorf("migrate: nothing migrated: %w", err)
				}
				res, err := seed.Migrate(ctx, d.rdb, g.prefix, d.namespace, d.store, time.Now())
				rec.Phase, rec.Stated, rec.Moved, rec.Skipped = "done", res.Seen, res.Migrated, len(res.Left)
				if err != nil {
					rec.Phase, rec.Note = "failed", rec.Note+": "+masked(err.Error())
				}
				_ = d.record(c, rec)
				if err != nil && !errors.Is(err, seed.ErrNotMigrated) {
					return err
				}
				migErr = err
				v.Seen, v.Migrated, v.Created, v.Merged, v.Corrupt = res.Seen, res.Migrated, res.Created, res.Merged, res.Corrupt
				v.Already, v.Deleted, v.Evicted, v.Left, v.LeftN = res.Already, res.Deleted, res.Evicted, res.Left, len(res.Left)
				v.Gone, v.Superseded, v.Shifts = res.Gone, res.Superseded, res.Shifts
			}
			w := c.OutOrStdout()
			if output == "json" {
				if err := writeJSON(w, v, true); err != nil {
					return err
				}
				return migErr
			}
			printMigrate(w, &v)
			return migErr
		},
	}
	c.Flags().StringVar(&from, "from-layout", "", "the layout the DLQ is in now: seed (required)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "count what would be migrated and what was already; change nothing")
	c.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json")
	cf.addYes(c, true)
	return c
}

func printMigrate(w io.Writer, v *migrateView) {
	if v.DryRun {
		fmt.Fprintf(w, "dry run: %d %s of %s would be migrated into namespace %q (%d corrupt, kept with their bytes); %d already migrated; nothing changed\n",
			v.Migrated, plural(v.Migrated, "entry", "entries"), v.From, v.Namespace, v.Corrupt, v.Already)
		return
	}
	fmt.Fprintf(w, "migrated %d %s of %s into namespace %q (new %d, merged %d, corrupt kept with their bytes %d)\n",
		v.Migrated, plural(v.Migrated, "entry", "entries"), v.From, v.Namespace, v.Created, v.Merged, v.Corrupt)
	fmt.Fprintf(w, "already migrated %d, left %d, seen %d; soft-deleted %d (reprocessing or deleted in the seed)\n", v.Already, v.LeftN, v.Seen, v.Deleted)
	if v.Gone > 0 || v.Superseded > 0 {
		fmt.Fprintf(w, "not soft-deleted: %d gone from the namespace (purged or evicted), %d failed again since their migration (left failed)\n", v.Gone, v.Superseded)
	}
	if v.Shifts > 0 {
		fmt.Fprintf(w, "the seed lists were trimmed during the run %d %s; every entry there before it and still there was migrated\n", v.Shifts, plural(v.Shifts, "time", "times"))
	}
	for _, l := range v.Left {
		fmt.Fprintf(w, "  left %s@%d: %s\n", l.Key, l.Position, l.Reason)
	}
	if len(v.Evicted) > 0 {
		fmt.Fprintf(w, "warning: the namespace's DLQ evicted %d older %s to make room\n", len(v.Evicted), plural(len(v.Evicted), "entry", "entries"))
	}
	fmt.Fprintln(w, "the seed lists are left as they were; a rerun migrates only what is new")
}

// migratePlan counts what a migration would do, reading the lists and the
// marker and writing nothing.
func (s *seedConn) migratePlan(ctx context.Context, ns string, v *migrateView) error {
	marker := seed.MarkerKey(s.prefix, ns)
	for _, list := range append([]string{layout.SeedDeadLetter}, layout.SeedSeverityLists...) {
		// every entry's identity: its bytes' and its occurrence among the
		// byte-identical ones, counted from the tail
		type item struct {
			base    string
			invalid bool
		}
		var items []item // newest first
		cur := ""
		for {
			p, err := seed.List(ctx, s.rdb, s.prefix, seed.Filter{Lists: []string{list}}, cur, seed.MaxLimit)
			if err != nil {
				return fmt.Errorf("migrate --dry-run: %w", err)
			}
			for _, e := range p.Entries {
				items = append(items, item{base: strings.TrimSuffix(seed.Identity(e.Key, e.Bytes, 1), "1"), invalid: e.Invalid != ""})
			}
			if cur = p.Next; cur == "" {
				break
			}
		}
		seen := map[string]int{}
		ids := make([]string, len(items))
		for i := len(items) - 1; i >= 0; i-- {
			seen[items[i].base]++
			ids[i] = items[i].base + strconv.Itoa(seen[items[i].base])
		}
		for i := 0; i < len(ids); i += seed.ChunkSize {
			chunk := ids[i:min(i+seed.ChunkSize, len(ids))]
			done, err := s.rdb.HMGet(ctx, marker, chunk...).Result()
			if err != nil {
				return fmt.Errorf("migrate --dry-run: read the marker: %w", err)
			}
			for j, d := range done {
				v.Seen++
				switch {
				case d != nil:
					v.Already++
				default:
					v.Migrated++
					if items[i+j].invalid {
						v.Corrupt++
					}
				}
			}
		}
	}
	return nil
}
