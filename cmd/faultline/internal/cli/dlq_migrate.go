package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/dlq"
)

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
