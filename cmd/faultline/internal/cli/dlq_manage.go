package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
)

// checkTarget refuses a --to queue that cannot be one (empty when given,
// control characters) or, unless allowed, one the namespace has never had.
func (d *dlqConn) checkTarget(c *cobra.Command, to string, allowNew bool) error {
	if !c.Flags().Changed("to") {
		return nil
	}
	if strings.TrimSpace(to) == "" || strings.ContainsFunc(to, unicode.IsControl) {
		return usage(c, fmt.Errorf("--to: %q is not a queue name (no empty names, no control characters)", masked(to)))
	}
	if allowNew {
		return nil
	}
	known, err := d.store.Queues(c.Context())
	if err != nil {
		return err
	}
	if !slices.Contains(known, to) {
		return usage(c, fmt.Errorf("--to: namespace %q has no queue %q (it has: %s); pass --new-queue to send jobs to a new one",
			d.namespace, masked(to), masked(strings.Join(known, ", "))))
	}
	return nil
}

// oneID checks that a command got exactly one entry ID.
func oneID(c *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usage(c, fmt.Errorf("%s takes one entry ID, got %d arguments", c.Name(), len(args)))
	}
	return nil
}

// moveError maps a store error of a move on id: an unknown ID or a status
// that does not allow the move is invalid input (exit 2).
func (d *dlqConn) moveError(c *cobra.Command, id string, err error) error {
	switch {
	case errors.Is(err, dlq.ErrNotFound):
		return d.notFound(c, id)
	case errors.Is(err, dlq.ErrWrongStatus):
		return usage(c, fmt.Errorf("%s %s: %w", c.Name(), masked(id), err))
	}
	return fmt.Errorf("%s %s: %w", c.Name(), masked(id), err)
}

func newDLQDeleteCommand(g *dlqGlobal) *cobra.Command {
	var (
		all    bool
		batch  int
		output string
		ff     filterFlags
		cf     confirmation
	)
	c := &cobra.Command{
		Use:   "delete (ID... | --all [FILTERS])",
		Short: "Soft-delete DLQ entries, by ID or every failed entry a filter matches (restore undoes it until they are purged)",
		Long: `delete marks failed or quarantined entries deleted: they stay in the DLQ, are not
requeued by requeue --all, and come back with restore until purge removes them.

With --all it takes every failed entry the filters match (--status quarantined takes
quarantined ones too), in bounded batches, with requeue --all's cut-off: the time the
count is shown. An entry that fails again after it is left alone.`,
		Example: `  faultline dlq delete ord-42 ord-43 --yes --by alice
  faultline dlq delete --all --task legacy-export --dry-run
  faultline dlq delete --all --error-type '*json.SyntaxError' --yes`,
		Args: func(c *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return usage(c, errors.New("give entry IDs or --all with filters, not both"))
			case !all && len(args) == 0:
				return usage(c, errors.New("delete needs entry IDs, or --all (with filters) to delete every failed entry they match"))
			case !all && ff.set():
				return usage(c, errors.New("filters (--severity, --task, ...) go with --all; with IDs, the IDs say what to delete"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return usage(c, fmt.Errorf("--output: unknown value %q (allowed: table, json)", masked(output)))
			}
			if batch < 1 || batch > 10_000 {
				return usage(c, fmt.Errorf("--batch must be between 1 and 10000, got %d", batch))
			}
			f, err := ff.filter(c, time.Now())
			if err != nil {
				return err
			}
			d, err := g.open(c, batch)
			if err != nil {
				return err
			}
			defer d.close()
			if all {
				return deleteAll(c, d, f, ff.spec(), g.actor(), cf, output)
			}
			return deleteIDs(c, d, args, g.actor(), cf)
		},
	}
	c.Flags().BoolVar(&all, "all", false, "delete every failed entry the filters match")
	c.Flags().IntVar(&batch, "batch", store.DefaultBatchSize, "entries per Redis script of a bulk delete (1..10000)")
	c.Flags().StringVarP(&output, "output", "o", "table", "output format of the --all summary: table, json")
	ff.add(c)
	cf.add(c, "be deleted")
	return c
}

// deleteIDs soft-deletes the entries named, one guarded step each.
func deleteIDs(c *cobra.Command, d *dlqConn, ids []string, by string, cf confirmation) error {
	ctx, w := c.Context(), c.OutOrStdout()
	if cf.dryRun {
		n := 0
		for _, id := range ids {
			e, err := d.store.Get(ctx, id)
			switch {
			case errors.Is(err, dlq.ErrNotFound):
				fmt.Fprintf(w, "would skip %s: not found\n", masked(id))
			case err != nil:
				return err
			case e.Corrupt || (e.Status != dlq.Failed && e.Status != dlq.Quarantined):
				fmt.Fprintf(w, "would skip %s: %s\n", masked(id), statusOf(&e))
			default:
				n++
				fmt.Fprintf(w, "would delete %s (%s)\n", masked(id), e.Status)
			}
		}
		fmt.Fprintf(w, "dry run: %d of %d would be deleted; nothing changed\n", n, len(ids))
		return nil
	}
	ok, err := cf.ask(c, fmt.Sprintf("delete %d %s in namespace %q at %s", len(ids), plural(len(ids), "entry", "entries"), d.namespace, d.target.printable()))
	if err != nil || !ok {
		return err
	}
	deleted, skipped := 0, 0
	defer func() {
		_ = d.record(c, dlq.AuditRecord{By: by, Action: "delete", IDs: ids, Stated: len(ids), Moved: deleted, Skipped: skipped})
	}()
	for _, id := range ids {
		err := d.store.Delete(ctx, id, by, time.Now())
		switch {
		case err == nil:
			deleted++
			fmt.Fprintf(w, "%s: deleted\n", masked(id))
		case errors.Is(err, dlq.ErrNotFound), errors.Is(err, dlq.ErrWrongStatus):
			skipped++
			fmt.Fprintf(w, "%s: skipped (%s)\n", masked(id), masked(err.Error()))
		default:
			return fmt.Errorf("delete %s (after %d deleted): %w", masked(id), deleted, err)
		}
	}
	fmt.Fprintf(w, "stated %d, deleted %d, skipped %d\n", len(ids), deleted, skipped)
	if skipped > 0 && deleted == 0 {
		return usage(c, fmt.Errorf("none of the %d entries could be deleted", len(ids)))
	}
	return nil
}

// deleteAll soft-deletes every failed entry f matches whose last failure is
// before the cut-off taken when the count is shown (requeueAll's rule).
func deleteAll(c *cobra.Command, d *dlqConn, f dlq.Filter, spec dlq.FilterSpec, by string, cf confirmation, output string) error {
	ctx, w := c.Context(), c.OutOrStdout()
	bd, ok := any(d.store).(dlq.BulkDeleter)
	if !ok {
		return errors.New("delete --all: this store cannot delete by filter")
	}
	cutoff := time.Now().Truncate(time.Millisecond)
	if f.Until.IsZero() || cutoff.Before(f.Until) {
		f.Until = cutoff
	}
	count, err := bd.DeleteMatching(ctx, f, by, time.Now(), true)
	if err != nil {
		return err
	}
	if afterBulkCount != nil {
		afterBulkCount()
	}
	sum := requeueSummary{DryRun: cf.dryRun, Stated: count.Matched, Cutoff: f.Until, Reasons: map[string]int{}}
	if cf.dryRun || count.Matched == 0 {
		sum.Batches, sum.Would = count.Batches, count.Matched
		return printBulk(w, "deleted", &sum, output)
	}
	ok, err = cf.ask(c, fmt.Sprintf("delete %d %s (failed before %s%s) in namespace %q at %s", count.Matched,
		plural(count.Matched, "entry", "entries"), f.Until.UTC().Format(cutoffLayout), filterNote(spec), d.namespace, d.target.printable()))
	if err != nil || !ok {
		return err
	}
	audit := dlq.AuditRecord{By: by, Action: "delete", Phase: "started", Filter: spec.String(), CutOff: f.Until, Stated: count.Matched}
	if err := d.record(c, audit); err != nil {
		return fmt.Errorf("delete --all: nothing deleted: %w", err)
	}
	res, err := bd.DeleteMatching(ctx, f, by, time.Now(), false)
	bulkSummary(&sum, res)
	audit.Phase, audit.At, audit.Moved, audit.Skipped = "done", time.Time{}, sum.Moved, sum.Skipped
	audit.Note = moreNote(audit.Note, sum.More)
	if err != nil {
		audit.Phase, audit.Note = "failed", masked(err.Error())
		_ = d.record(c, audit)
		return fmt.Errorf("delete --all (after %d deleted): %w", res.Requeued, err)
	}
	_ = d.record(c, audit)
	return printBulk(w, "deleted", &sum, output)
}

// filterNote is ", matching FILTER" for a confirmation, "" for no filter.
func filterNote(spec dlq.FilterSpec) string {
	if spec.Empty() {
		return ""
	}
	return ", matching " + masked(spec.String())
}

func statusOf(e *dlq.Entry) string {
	if e.Corrupt {
		return "corrupt"
	}
	return e.Status.String()
}

func newDLQRestoreCommand(g *dlqGlobal) *cobra.Command {
	var cf confirmation
	c := &cobra.Command{
		Use:   "restore ID...",
		Short: "Undo a delete: each entry gets back the status it had",
		Long: `restore undoes delete: each entry named gets back the status it had before, in one
guarded step each. To undo a delete --all, list what it deleted (faultline dlq list
--status deleted, with its filters; faultline dlq audit names the filter) and pass the
IDs, e.g. with --output jsonl and jq. It asks first on a terminal; a script passes --yes.`,
		Example: `  faultline dlq restore ord-42
  faultline dlq list --status deleted --task charge --output jsonl | jq -r .id | xargs faultline dlq restore --yes`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(c, errors.New("restore needs at least one entry ID"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			ok, err := cf.ask(c, fmt.Sprintf("restore %d %s in namespace %q at %s", len(args), plural(len(args), "entry", "entries"), d.namespace, d.target.printable()))
			if err != nil || !ok {
				return err
			}
			ctx, w, by := c.Context(), c.OutOrStdout(), g.actor()
			restored, skipped := 0, 0
			defer func() {
				_ = d.record(c, dlq.AuditRecord{By: by, Action: "restore", IDs: args, Stated: len(args), Moved: restored, Skipped: skipped})
			}()
			for _, id := range args {
				err := d.store.Restore(ctx, id, by, time.Now())
				switch {
				case err == nil:
					restored++
					status := "?"
					if e, err := d.store.Get(ctx, id); err == nil {
						status = statusOf(&e)
					}
					fmt.Fprintf(w, "%s: restored (%s)\n", masked(id), status)
				case errors.Is(err, dlq.ErrNotFound), errors.Is(err, dlq.ErrWrongStatus):
					skipped++
					fmt.Fprintf(w, "%s: skipped (%s)\n", masked(id), masked(err.Error()))
				default:
					return fmt.Errorf("restore %s (after %d restored): %w", masked(id), restored, err)
				}
			}
			if len(args) > 1 {
				fmt.Fprintf(w, "stated %d, restored %d, skipped %d\n", len(args), restored, skipped)
			}
			if restored == 0 {
				if len(args) == 1 {
					return d.moveError(c, args[0], d.store.Restore(ctx, args[0], by, time.Now()))
				}
				return usage(c, fmt.Errorf("none of the %d entries could be restored", len(args)))
			}
			return nil
		},
	}
	cf.addYes(c, false)
	return c
}

func newDLQQuarantineCommand(g *dlqGlobal) *cobra.Command {
	var (
		reason string
		cf     confirmation
	)
	c := &cobra.Command{
		Use:   "quarantine ID --reason TEXT",
		Short: "Mark a failed entry as poison: requeue --all leaves it alone",
		Long: `quarantine marks a failed entry as poison: requeue --all and the off-peak auto-retry
leave it alone; only an explicit requeue (by ID, or --all --status quarantined) sends
it back. The reason goes into its status history, as "by NAME: REASON". It asks
first on a terminal; a script passes --yes.`,
		Example: `  faultline dlq quarantine ord-42 --reason "crashes the parser" --yes`,
		Args:    oneID,
		RunE: func(c *cobra.Command, args []string) error {
			if reason == "" {
				return usage(c, errors.New("quarantine needs --reason (it goes into the entry's status history)"))
			}
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			id := args[0]
			ok, err := cf.ask(c, fmt.Sprintf("quarantine %s in namespace %q at %s", masked(id), d.namespace, d.target.printable()))
			if err != nil || !ok {
				return err
			}
			// dlq.Store.Quarantine takes no "by": who acted goes into the
			// reason.
			text := "by " + g.actor() + ": " + reason
			if err := d.store.Quarantine(c.Context(), id, text, time.Now()); err != nil {
				return d.moveError(c, id, err)
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: quarantined\n", masked(id))
			_ = d.record(c, dlq.AuditRecord{By: g.actor(), Action: "quarantine", IDs: args, Stated: 1, Moved: 1, Note: reason})
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, for the status history (required)")
	cf.addYes(c, false)
	return c
}

func newDLQPurgeCommand(g *dlqGlobal) *cobra.Command {
	var (
		olderThan string
		cf        confirmation
	)
	c := &cobra.Command{
		Use:   "purge --older-than DURATION",
		Short: "Remove entries (any status, corrupt ones too) whose last failure is older than DURATION, for good",
		Long: `purge removes, for good, every entry whose last failure is older than --older-than
(7d, 36h, 90m): failed, requeued, deleted and quarantined ones alike, and corrupt
entries (they have no known failure time), in bounded batches. It cannot be undone:
it asks first, stating the count, unless --yes; --dry-run only counts.`,
		Example: `  faultline dlq purge --older-than 30d --dry-run
  faultline dlq purge --older-than 30d --yes`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if olderThan == "" {
				return usage(c, errors.New("purge needs --older-than DURATION (e.g. 30d, 36h)"))
			}
			age, err := dlq.ParseAgo(olderThan)
			if err != nil {
				return usage(c, fmt.Errorf("--older-than: expected a duration like 30d, 36h or 90m, got %q", masked(olderThan)))
			}
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			ctx, w := c.Context(), c.OutOrStdout()
			cutoff := time.Now().Add(-age)
			// Count: the decodable entries older than the cut-off, page by
			// page, and the corrupt ones (indexed at the zero time).
			n := 0
			cursor := ""
			for {
				page, err := d.store.List(ctx, dlq.Filter{Until: cutoff}, cursor, 1000)
				if err != nil {
					return err
				}
				n += len(page.Entries)
				if page.Next == "" {
					break
				}
				cursor = page.Next
			}
			st, err := d.store.Stats(ctx)
			if err != nil {
				return err
			}
			n += st.Corrupt
			what := fmt.Sprintf("%d %s (last failure before %s; %d corrupt)", n, plural(n, "entry", "entries"), cutoff.UTC().Format(time.RFC3339), st.Corrupt)
			if cf.dryRun {
				fmt.Fprintf(w, "dry run: purge would remove %s; nothing changed\n", what)
				return nil
			}
			if n == 0 {
				fmt.Fprintln(w, "nothing to purge")
				return nil
			}
			ok, err := cf.ask(c, fmt.Sprintf("remove %s for good from namespace %q at %s", what, d.namespace, d.target.printable()))
			if err != nil || !ok {
				return err
			}
			audit := dlq.AuditRecord{By: g.actor(), Action: "purge", Phase: "started", Filter: "--older-than=" + strconv.Quote(olderThan), CutOff: cutoff, Stated: n}
			if err := d.record(c, audit); err != nil {
				return fmt.Errorf("purge: nothing removed: %w", err)
			}
			removed, err := d.store.Purge(ctx, cutoff, time.Now())
			audit.Phase, audit.At, audit.Moved = "done", time.Time{}, removed
			if err != nil {
				audit.Phase, audit.Note = "failed", masked(err.Error())
				_ = d.record(c, audit)
				return fmt.Errorf("purge (after %d removed): %w", removed, err)
			}
			_ = d.record(c, audit)
			fmt.Fprintf(w, "stated %d, purged %d\n", n, removed)
			return nil
		},
	}
	c.Flags().StringVar(&olderThan, "older-than", "", "remove entries whose last failure is older than this (30d, 36h, 90m)")
	cf.add(c, "be purged")
	return c
}
