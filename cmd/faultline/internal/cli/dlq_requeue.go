package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
)

// cutoffLayout prints a cut-off to the store's resolution, the millisecond.
const cutoffLayout = "2006-01-02T15:04:05.000Z07:00"

// requeueSummary is what a requeue did, as --output json prints it.
type requeueSummary struct {
	DryRun bool `json:"dry_run"`
	// Stated is the count the operator was shown (and confirmed).
	Stated int `json:"stated"`
	// Would is, on a dry run, how many would be requeued.
	Would int `json:"would_move,omitempty"`
	// Moved were requeued by this run; Skipped were not, by reason.
	Moved   int            `json:"moved"`
	Skipped int            `json:"skipped"`
	Reasons map[string]int `json:"skipped_by_reason,omitempty"`
	// More is how many more entries the bulk move met than were stated:
	// entries that came to match the filter between the count and the
	// move (a dead letter written meanwhile whose last failure is before
	// the cut-off, an entry restored), moved or skipped with the others.
	// Stated + More = Moved + Skipped.
	More int `json:"more_than_stated,omitempty"`
	// Cutoff is the time the count was taken: entries whose last failure
	// is at or after it are left alone (bulk requeue only).
	Cutoff  time.Time `json:"cutoff,omitzero"`
	Batches int       `json:"batches,omitempty"`
}

func newDLQRequeueCommand(g *dlqGlobal) *cobra.Command {
	var (
		all, reset bool
		newQueue   bool
		to, output string
		batch      int
		shown      int
		ff         filterFlags
		cf         confirmation
	)
	c := &cobra.Command{
		Use:   "requeue (ID... | --all [FILTERS])",
		Short: "Send DLQ entries back to a queue: by ID, or every failed entry a filter matches",
		Long: `requeue sends entries' jobs back to their source queue (or --to QUEUE), each in one
guarded step: an entry already requeued, deleted, gone or whose job is queued again
is skipped and counted, never requeued twice.

With --all it takes every failed entry the filters match (--status quarantined
takes quarantined ones too), in bounded batches of --batch entries per Redis script.
The cut-off time is taken when the count is shown: an entry whose last failure is
at or after it (a job that died again meanwhile) is left for the next run, so the
count confirmed is the count moved unless entries changed under the run. The cut-off
is on the last failure, not on arrival: a dead letter written during the run whose
last failure is before it (a slow worker, a held one flushed), or an entry restored
meanwhile, is moved too, and the summary says so ("moved 159 (1 more than stated:
...)"; more_than_stated in json).

The job keeps its attempt count (one more attempt before the DLQ again) unless
--reset-attempts gives it the full retry budget.`,
		Example: `  faultline dlq requeue ord-42 ord-43 --yes
  faultline dlq requeue --all --severity medium --dry-run
  faultline dlq requeue --all --task charge --since 2h --reset-attempts --yes`,
		RunE: func(c *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return usage(c, fmt.Errorf("--output: unknown value %q (allowed: table, json)", masked(output)))
			}
			switch {
			case all && len(args) > 0:
				return usage(c, errors.New("give entry IDs or --all with filters, not both"))
			case !all && len(args) == 0:
				return usage(c, errors.New("requeue needs entry IDs, or --all (with filters) to requeue every failed entry they match"))
			case !all && ff.set():
				return usage(c, errors.New("filters (--severity, --task, ...) go with --all; with IDs, the IDs say what to requeue"))
			}
			if g.isSeed() {
				return g.seedRequeue(c, args, seedRequeueFlags{all: all, reset: reset, to: to, output: output, batch: batch, shown: shown, ff: &ff, cf: cf})
			}
			if batch < 1 || batch > 10_000 {
				return usage(c, fmt.Errorf("--batch must be between 1 and 10000, got %d", batch))
			}
			now := time.Now()
			f, err := ff.filter(c, now)
			if err != nil {
				return err
			}
			opts := dlq.RequeueOptions{Queue: to, Budget: dlq.OneMoreAttempt, By: g.actor()}
			if reset {
				opts.Budget = dlq.ResetAttempts
			}
			d, err := g.open(c, batch)
			if err != nil {
				return err
			}
			defer d.close()
			if err := d.checkTarget(c, to, newQueue); err != nil {
				return err
			}
			if all {
				return requeueAll(c, d, f, ff.spec(), opts, cf, output, shown)
			}
			return requeueIDs(c, d, args, opts, cf, output)
		},
	}
	c.Flags().BoolVar(&all, "all", false, "requeue every failed entry the filters match")
	c.Flags().BoolVar(&reset, "reset-attempts", false, "give each job a full retry budget (its attempt count set to 0)")
	c.Flags().StringVar(&to, "to", "", "send the jobs to this queue instead of their source queue (one the namespace has, unless --new-queue)")
	c.Flags().BoolVar(&newQueue, "new-queue", false, "with --to, allow a queue the namespace has never had (a typo strands jobs where no worker reads)")
	c.Flags().IntVar(&batch, "batch", store.DefaultBatchSize, "entries per Redis script of a bulk requeue (1..10000)")
	c.Flags().IntVar(&shown, "show", 20, "with --dry-run --all, how many of the matching entries to list")
	c.Flags().StringVarP(&output, "output", "o", "table", "output format of the summary: table, json")
	ff.add(c)
	cf.add(c, "be requeued")
	return c
}

// requeueIDs requeues the entries named, one guarded step each.
func requeueIDs(c *cobra.Command, d *dlqConn, ids []string, opts dlq.RequeueOptions, cf confirmation, output string) error {
	ctx, w := c.Context(), c.OutOrStdout()
	sum := requeueSummary{DryRun: cf.dryRun, Stated: len(ids), Reasons: map[string]int{}}
	if cf.dryRun {
		for _, id := range ids {
			e, err := d.store.Get(ctx, id)
			reason := ""
			switch {
			case errors.Is(err, dlq.ErrNotFound):
				reason = dlq.OutcomeNotFound.String()
			case err != nil:
				return err
			case e.Corrupt || e.Status == dlq.Deleted:
				reason = dlq.OutcomeNotRequeueable.String()
			case e.Status == dlq.Requeued:
				reason = dlq.OutcomeAlreadyRequeued.String()
			}
			if reason != "" {
				sum.Skipped++
				sum.Reasons[reason]++
				if output == "table" {
					fmt.Fprintf(w, "would skip %s: %s\n", masked(id), reason)
				}
				continue
			}
			sum.Would++
			if output == "table" {
				fmt.Fprintf(w, "would requeue %s (%s, %s) to %s\n", masked(id), e.Status, masked(e.Job.Task), requeueTarget(opts, &e))
			}
		}
		return printSummary(w, &sum, output)
	}
	ok, err := cf.ask(c, fmt.Sprintf("requeue %d %s in namespace %q at %s", len(ids), plural(len(ids), "entry", "entries"), d.namespace, d.target.printable()))
	if err != nil || !ok {
		return err
	}
	defer func() {
		_ = d.record(c, dlq.AuditRecord{By: opts.By, Action: "requeue", IDs: ids, Stated: sum.Stated,
			Moved: sum.Moved, Skipped: sum.Skipped, Note: requeueNote(opts)})
	}()
	for _, id := range ids {
		out, err := d.store.Requeue(ctx, id, opts, time.Now())
		if err != nil {
			return fmt.Errorf("requeue %s (after %d moved): %w", masked(id), sum.Moved, err)
		}
		if out == dlq.OutcomeRequeued {
			sum.Moved++
		} else {
			sum.Skipped++
			sum.Reasons[out.String()]++
		}
		if output == "table" {
			fmt.Fprintf(w, "%s: %s\n", masked(id), out)
		}
	}
	if err := printSummary(w, &sum, output); err != nil {
		return err
	}
	if n := sum.Reasons[dlq.OutcomeNotFound.String()]; n > 0 {
		return usage(c, fmt.Errorf("%d of the %d IDs %s not in the DLQ of namespace %q", n, len(ids), plural(n, "is", "are"), d.namespace))
	}
	return nil
}

// requeueAll requeues every failed entry f matches whose last failure is
// before the cut-off taken when the count is shown.
func requeueAll(c *cobra.Command, d *dlqConn, f dlq.Filter, spec dlq.FilterSpec, opts dlq.RequeueOptions, cf confirmation, output string, shown int) error {
	ctx, w := c.Context(), c.OutOrStdout()
	// The cut-off: taken now, with the count; the run carries it in the
	// filter (Until, exclusive), so an entry that dies again after it is
	// not requeued by this run.
	cutoff := time.Now().Truncate(time.Millisecond)
	if f.Until.IsZero() || cutoff.Before(f.Until) {
		f.Until = cutoff
	}
	count, err := d.store.RequeueMatching(ctx, f, opts, time.Now(), true)
	if err != nil {
		return err
	}
	if afterBulkCount != nil {
		afterBulkCount()
	}
	sum := requeueSummary{DryRun: cf.dryRun, Stated: count.Matched, Cutoff: f.Until, Reasons: map[string]int{}}
	if cf.dryRun {
		sum.Batches, sum.Would = count.Batches, count.Matched
		if output == "table" {
			if err := listMatching(ctx, w, d, f, shown, count.Matched); err != nil {
				return err
			}
		}
		return printSummary(w, &sum, output)
	}
	if count.Matched == 0 {
		return printSummary(w, &sum, output)
	}
	ok, err := cf.ask(c, fmt.Sprintf("requeue %d %s (failed before %s) in namespace %q at %s", count.Matched,
		plural(count.Matched, "entry", "entries"), f.Until.UTC().Format(cutoffLayout), d.namespace, d.target.printable()))
	if err != nil || !ok {
		return err
	}
	audit := dlq.AuditRecord{By: opts.By, Action: "requeue", Phase: "started", Filter: spec.String(), CutOff: f.Until,
		Stated: count.Matched, Note: requeueNote(opts)}
	if err := d.record(c, audit); err != nil {
		return fmt.Errorf("requeue --all: nothing moved: %w", err)
	}
	res, err := d.store.RequeueMatching(ctx, f, opts, time.Now(), false)
	bulkSummary(&sum, res)
	audit.Phase, audit.At, audit.Moved, audit.Skipped = "done", time.Time{}, sum.Moved, sum.Skipped
	audit.Note = moreNote(audit.Note, sum.More)
	if err != nil {
		audit.Phase, audit.Note = "failed", masked(err.Error())
		_ = d.record(c, audit)
		return fmt.Errorf("requeue --all (after %d moved): %w", res.Requeued, err)
	}
	_ = d.record(c, audit)
	return printSummary(w, &sum, output)
}

// bulkSummary fills a summary's counts from a bulk move's result: moved,
// and the skipped by reason — those the run found changed, gone, busy or
// invalid, and those stated but no longer matching when their batch came
// (moved out of the filter by another operator or run).
//
// The cut-off is on the entries' last failure, not on when they reached the
// DLQ: a dead letter written between the count and the move whose last
// failure is before the cut-off (its worker was slow to write it, a held
// one flushed, a clock behind), or an entry restored meanwhile, matches
// too, and is moved. More counts them (net of the stated entries that no
// longer match): the summary says so rather than moving more than it
// stated without a word.
func bulkSummary(sum *requeueSummary, res dlq.BulkResult) {
	sum.Moved, sum.Batches = res.Requeued, res.Batches
	sum.More = max(res.Matched-sum.Stated, 0)
	sum.Skipped = res.Skipped + max(sum.Stated-res.Matched, 0)
	for reason, n := range map[string]int{"changed": res.Changed, "gone": res.Gone, "busy": res.Busy, "invalid": res.Invalid} {
		if n > 0 {
			sum.Reasons[reason] = n
		}
	}
	if other := res.Skipped - res.Changed - res.Gone - res.Busy - res.Invalid; other > 0 {
		sum.Reasons["other"] = other
	}
	if gone := sum.Stated - res.Matched; gone > 0 {
		sum.Reasons["no-longer-matching"] = gone
	}
}

// moreNote is an audit note with, when more entries were met than stated,
// how many more.
func moreNote(note string, more int) string {
	if more == 0 {
		return note
	}
	s := fmt.Sprintf("%d more than stated (came to match the filter during the move)", more)
	if note == "" {
		return s
	}
	return note + "; " + s
}

// requeueNote says where a requeue sends jobs and with what budget, for
// the audit stream.
func requeueNote(opts dlq.RequeueOptions) string {
	note := "one more attempt"
	if opts.Budget == dlq.ResetAttempts {
		note = "attempts reset"
	}
	if opts.Queue != "" {
		note += ", to queue " + opts.Queue
	}
	return note
}

// listMatching prints up to n of the failed entries f matches (the ones a
// requeue --all would take), newest first.
func listMatching(ctx context.Context, w io.Writer, d *dlqConn, f dlq.Filter, n, matched int) error {
	if n <= 0 || matched == 0 {
		return nil
	}
	if len(f.Statuses) == 0 {
		f.Statuses = []dlq.Status{dlq.Failed}
	} else {
		var take []dlq.Status
		for _, st := range f.Statuses {
			if st == dlq.Failed || st == dlq.Quarantined {
				take = append(take, st)
			}
		}
		f.Statuses = take
	}
	page, err := d.store.List(ctx, f, "", n)
	if err != nil {
		return err
	}
	rows := make([]entryRow, len(page.Entries))
	for i := range page.Entries {
		rows[i] = rowOf(&page.Entries[i])
	}
	printRows(w, rows, termWidth())
	if matched > len(rows) {
		fmt.Fprintf(w, "… and %d more\n", matched-len(rows))
	}
	return nil
}

func requeueTarget(opts dlq.RequeueOptions, e *dlq.Entry) string {
	if opts.Queue != "" {
		return opts.Queue
	}
	if e.SourceQueue != "" {
		return e.SourceQueue
	}
	return e.Job.QueueName()
}

func printSummary(w io.Writer, s *requeueSummary, output string) error {
	return printBulk(w, "requeued", s, output)
}

// printBulk prints what a move did (or, on a dry run, would do) to the
// entries: verb is "requeued" or "deleted".
func printBulk(w io.Writer, verb string, s *requeueSummary, output string) error {
	if output == "json" {
		return writeJSON(w, s, true)
	}
	if s.DryRun {
		fmt.Fprintf(w, "dry run: %d %s would be %s", s.Would, plural(s.Would, "entry", "entries"), verb)
		if s.Skipped > 0 {
			fmt.Fprintf(w, ", %d skipped (%s)", s.Skipped, reasons(s.Reasons))
		}
		if !s.Cutoff.IsZero() {
			fmt.Fprintf(w, " (last failure before %s)", s.Cutoff.UTC().Format(cutoffLayout))
		}
		fmt.Fprintln(w, "; nothing changed")
		return nil
	}
	did := "moved"
	if verb != "requeued" {
		did = verb
	}
	fmt.Fprintf(w, "stated %d, %s %d", s.Stated, did, s.Moved)
	if s.More > 0 {
		fmt.Fprintf(w, " (%d more than stated: entries came to match the filter while the move ran: dead letters written meanwhile with a last failure before the cut-off, or entries restored)", s.More)
	}
	fmt.Fprintf(w, ", skipped %d", s.Skipped)
	if len(s.Reasons) > 0 {
		fmt.Fprintf(w, " (%s)", reasons(s.Reasons))
	}
	if !s.Cutoff.IsZero() {
		fmt.Fprintf(w, "; cut-off %s", s.Cutoff.UTC().Format(cutoffLayout))
	}
	fmt.Fprintln(w)
	return nil
}

func reasons(m map[string]int) string {
	var parts []string
	for _, k := range sortedStrings(keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
