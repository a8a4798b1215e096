package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/dlq"
)

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
