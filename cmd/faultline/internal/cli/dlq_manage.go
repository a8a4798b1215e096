package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/dlq"
)

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
	var cf confirmation
	c := &cobra.Command{
		Use:   "delete ID...",
		Short: "Soft-delete DLQ entries (restore undoes it until they are purged)",
		Long: `delete marks failed or quarantined entries deleted: they stay in the DLQ, are not
requeued by requeue --all, and come back with restore until purge removes them.`,
		Example: `  faultline dlq delete ord-42 ord-43 --yes --by alice`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(c, errors.New("delete needs at least one entry ID"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			ctx, w := c.Context(), c.OutOrStdout()
			if cf.dryRun {
				n := 0
				for _, id := range args {
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
				fmt.Fprintf(w, "dry run: %d of %d would be deleted; nothing changed\n", n, len(args))
				return nil
			}
			ok, err := cf.ask(c, fmt.Sprintf("delete %d %s in namespace %q at %s", len(args), plural(len(args), "entry", "entries"), d.namespace, d.target.printable()))
			if err != nil || !ok {
				return err
			}
			by := g.actor()
			deleted, skipped := 0, 0
			for _, id := range args {
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
			fmt.Fprintf(w, "stated %d, deleted %d, skipped %d\n", len(args), deleted, skipped)
			if skipped > 0 && deleted == 0 {
				return usage(c, fmt.Errorf("none of the %d entries could be deleted", len(args)))
			}
			return nil
		},
	}
	cf.add(c, "be deleted")
	return c
}

func statusOf(e *dlq.Entry) string {
	if e.Corrupt {
		return "corrupt"
	}
	return e.Status.String()
}

func newDLQRestoreCommand(g *dlqGlobal) *cobra.Command {
	c := &cobra.Command{
		Use:     "restore ID",
		Short:   "Undo a delete: the entry gets back the status it had",
		Example: `  faultline dlq restore ord-42`,
		Args:    oneID,
		RunE: func(c *cobra.Command, args []string) error {
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			id := args[0]
			if err := d.store.Restore(c.Context(), id, g.actor(), time.Now()); err != nil {
				return d.moveError(c, id, err)
			}
			e, err := d.store.Get(c.Context(), id)
			if err != nil {
				return d.moveError(c, id, err)
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: restored (%s)\n", masked(id), statusOf(&e))
			return nil
		},
	}
	return c
}

func newDLQQuarantineCommand(g *dlqGlobal) *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   "quarantine ID --reason TEXT",
		Short: "Mark a failed entry as poison: requeue --all leaves it alone",
		Long: `quarantine marks a failed entry as poison: requeue --all and the off-peak auto-retry
leave it alone; only an explicit requeue (by ID, or --all --status quarantined) sends
it back. The reason goes into its status history, as "by NAME: REASON".`,
		Example: `  faultline dlq quarantine ord-42 --reason "crashes the parser"`,
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
			// dlq.Store.Quarantine takes no "by": who acted goes into the
			// reason.
			text := "by " + g.actor() + ": " + reason
			if err := d.store.Quarantine(c.Context(), id, text, time.Now()); err != nil {
				return d.moveError(c, id, err)
			}
			fmt.Fprintf(c.OutOrStdout(), "%s: quarantined\n", masked(id))
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, for the status history (required)")
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
			removed, err := d.store.Purge(ctx, cutoff, time.Now())
			if err != nil {
				return fmt.Errorf("purge (after %d removed): %w", removed, err)
			}
			fmt.Fprintf(w, "stated %d, purged %d\n", n, removed)
			return nil
		},
	}
	c.Flags().StringVar(&olderThan, "older-than", "", "remove entries whose last failure is older than this (30d, 36h, 90m)")
	cf.add(c, "be purged")
	return c
}
