package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// auditRow is one audit record as audit prints it (json, jsonl).
type auditRow struct {
	ID      string    `json:"id"`
	At      time.Time `json:"at"`
	By      string    `json:"by"`
	Via     string    `json:"via"`
	Action  string    `json:"action"`
	Phase   string    `json:"phase,omitempty"`
	IDs     []string  `json:"ids,omitempty"`
	Filter  string    `json:"filter,omitempty"`
	CutOff  time.Time `json:"cut_off,omitzero"`
	Stated  int       `json:"stated"`
	Moved   int       `json:"moved"`
	Skipped int       `json:"skipped"`
	Note    string    `json:"note,omitempty"`
}

func auditRowOf(r *dlq.AuditRecord) auditRow {
	return auditRow{ID: r.ID, At: r.At, By: masked(r.By), Via: r.Via, Action: r.Action, Phase: r.Phase, IDs: r.IDs,
		Filter: masked(r.Filter), CutOff: r.CutOff, Stated: r.Stated, Moved: r.Moved, Skipped: r.Skipped, Note: masked(r.Note)}
}

// auditView is audit as --output json prints it.
type auditView struct {
	Records []auditRow `json:"records"`
	// NextCursor is the --cursor of the next page; "" after the last.
	NextCursor string `json:"next_cursor"`
}

func newDLQAuditCommand(g *dlqGlobal) *cobra.Command {
	var (
		output, cursor string
		limit          int
	)
	c := &cobra.Command{
		Use:   "audit",
		Short: "List the operator actions on the DLQ, newest first: who did what, when, through which tool, to how many entries",
		Long: `audit prints the namespace's audit stream, newest first, a page at a time: every
requeue, delete, restore, quarantine, purge, edit, import, migrate and upgrade made
with faultline dlq or the web UI — who (--by, a UI token's name, or the OS user), when,
through which tool, the counts shown and done, and the entries (their IDs, up to 100
a record, or the filter and cut-off of a bulk move). A bulk move writes a "started"
record before it begins and a "done" one with its result, so a run that was
interrupted shows as started and never done. Records never hold a payload.

The stream keeps the newest 100,000 records (about: Redis trims whole stream nodes).
The page's --cursor is printed after the table (on stderr with --output jsonl, as
next_cursor with --output json).`,
		Example: `  faultline dlq audit
  faultline dlq audit --limit 20 --output jsonl
  faultline dlq audit --cursor 1767225600000-0`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := dlqOutput(c, output); err != nil {
				return err
			}
			if limit < 1 || limit > 10_000 {
				return usage(c, fmt.Errorf("--limit must be between 1 and 10000, got %d", limit))
			}
			if cursor != "" && !validAuditCursor(cursor) {
				return usage(c, fmt.Errorf("--cursor: %q is not a cursor faultline dlq audit printed (MILLIS-SEQ)", masked(cursor)))
			}
			return g.withConn(c, 0, func(ctx context.Context, d *dlqConn) error {
				page, err := d.store.AuditLog(ctx, cursor, limit)
				if err != nil {
					return err
				}
				rows := make([]auditRow, len(page.Records))
				for i := range page.Records {
					rows[i] = auditRowOf(&page.Records[i])
				}
				if len(rows) == 0 && output == "table" {
					fmt.Fprintf(c.OutOrStdout(), "no audit records in namespace %q at %s\n", d.namespace, d.target.printable())
					return nil
				}
				return writePage(c, output, rows, auditView{Records: rows, NextCursor: page.Next}, page.Next, printAuditRows)
			})
		},
	}
	addOutputFlag(c, &output)
	c.Flags().IntVar(&limit, "limit", 50, "records per page")
	c.Flags().StringVar(&cursor, "cursor", "", "where the page starts: the cursor the previous page printed")
	return c
}

// validAuditCursor checks a cursor's shape (MILLIS-SEQ, a stream ID), so
// that a mistyped one is invalid input rather than an error from the store.
func validAuditCursor(s string) bool {
	a, b, ok := strings.Cut(s, "-")
	_, err1 := strconv.ParseUint(a, 10, 64)
	_, err2 := strconv.ParseUint(b, 10, 64)
	return ok && err1 == nil && err2 == nil
}

// printAuditRows prints rows as a table no wider than width: the last
// column (the filter or the IDs, and the note) is cut with "…" to fit.
func printAuditRows(w io.Writer, rows []auditRow, width int) {
	cells := [][]string{{"AT", "BY", "VIA", "ACTION", "PHASE", "COUNTS", "FILTER/IDS"}}
	for _, r := range rows {
		counts := fmt.Sprintf("stated %d, moved %d", r.Stated, r.Moved)
		if r.Skipped > 0 {
			counts += fmt.Sprintf(", skipped %d", r.Skipped)
		}
		cells = append(cells, []string{r.At.UTC().Format("2006-01-02 15:04:05"), dash(oneLine(r.By)), dash(r.Via), dash(r.Action),
			dash(r.Phase), counts, dash(oneLine(what(&r)))})
	}
	widths := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, s := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	used := 0
	for _, n := range widths[:len(widths)-1] {
		used += n + 2
	}
	widths[len(widths)-1] = max(min(widths[len(widths)-1], width-used), 10)
	var b strings.Builder
	for _, row := range cells {
		b.Reset()
		for i, s := range row {
			s = cut(s, widths[i])
			b.WriteString(s)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(s)+2))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// what is a record's last cell: the bulk move's filter and cut-off, or the
// entries' IDs ("…" when the record names fewer than it counts), then the
// note.
func what(r *auditRow) string {
	var s string
	switch {
	case r.Filter != "" || !r.CutOff.IsZero():
		s = dash(r.Filter)
		if !r.CutOff.IsZero() {
			s += " before " + r.CutOff.UTC().Format(time.RFC3339)
		}
	case len(r.IDs) > 0:
		s = strings.Join(r.IDs, ",")
		if len(r.IDs) < max(r.Stated, r.Moved+r.Skipped) {
			s += ",…"
		}
	}
	if r.Note != "" {
		if s != "" {
			s += " "
		}
		s += "(" + r.Note + ")"
	}
	return s
}

// upgradeView is upgrade as --output json prints it.
type upgradeView struct {
	Redis string `json:"redis"`
	redisstore.UpgradeReport
}

func newDLQUpgradeCommand(g *dlqGlobal) *cobra.Command {
	var (
		output string
		dryRun bool
		batch  int
		cf     confirmation
	)
	c := &cobra.Command{
		Use:   "upgrade",
		Short: "Bring a namespace written by an older faultline to this faultline's Redis layout",
		Long: `upgrade brings the namespace's data to the Redis layout of this faultline (layout
version ` + strconv.Itoa(redisstore.LayoutVersion) + `): data written by a faultline before layouts had versions has no
layout key. It checks every DLQ entry's indexes against its stored bytes (its meta,
the time index, its status's index), rebuilds those that are missing or wrong,
removes index members that have no entry, resets each status counter to its index,
and then writes the layout key. Entries whose bytes do not decode are indexed as
corrupt and kept, never dropped. It works in batches of --batch entries, each one
short script, so workers may go on meanwhile; running it again finds nothing to fix.
--dry-run counts what it would fix and writes nothing.

A namespace at this layout already, or empty, is left as it is. A namespace of a
newer layout is refused (exit 2): use a newer faultline. Every faultline dlq command
refuses such a namespace the same way. When there is something to upgrade it asks
first on a terminal; a script passes --yes.`,
		Example: `  faultline dlq upgrade --dry-run
  faultline dlq upgrade --namespace payments --output json --yes`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := dlqOutput(c, output); err != nil {
				return err
			}
			return g.withConn(c, batch, func(ctx context.Context, d *dlqConn) error {
				if !dryRun {
					if ok, err := askUpgrade(c, d, &cf); err != nil || !ok {
						return err
					}
				}
				rep, err := d.store.Upgrade(ctx, dryRun)
				if err != nil {
					return layoutRefusal(err)
				}
				if !dryRun && !rep.Current && !rep.Empty {
					// The upgrade is done; an audit that fails is said on
					// stderr and does not undo it.
					if _, err := d.store.Audit(ctx, dlq.AuditRecord{At: time.Now(), By: g.actor(), Via: "cli", Action: "upgrade",
						Stated: rep.Checked, Moved: rep.Fixed + rep.Strays, Note: upgradeNote(&rep)}); err != nil {
						printErr(c.ErrOrStderr(), fmt.Errorf("warning: audit upgrade: %w", err))
					}
				}
				v := upgradeView{Redis: d.target.printable(), UpgradeReport: rep}
				w := c.OutOrStdout()
				if output != "table" {
					return writeJSON(w, v, output == "json")
				}
				printUpgrade(w, &v)
				return nil
			})
		},
	}
	addOutputFlag(c, &output)
	c.Flags().BoolVar(&dryRun, "dry-run", false, "count what would be fixed; change nothing")
	c.Flags().IntVar(&batch, "batch", 100, "entries per script (each batch is one short script)")
	cf.addYes(c, true)
	return c
}

// askUpgrade asks for the go-ahead of an upgrade that has something to do:
// a namespace below this layout version that holds data. One at the
// version already, or empty, is left as it is without asking.
func askUpgrade(c *cobra.Command, d *dlqConn, cf *confirmation) (bool, error) {
	v, err := d.store.LayoutVersion(c.Context())
	if err != nil || v >= redisstore.LayoutVersion {
		return err == nil, err
	}
	if holds, err := d.holdsData(c.Context()); err != nil || !holds {
		return err == nil, err
	}
	return cf.ask(c, fmt.Sprintf("upgrade namespace %q at %s from layout version %d to %d (re-index its entries where needed, then stamp the version)",
		d.namespace, d.target.printable(), v, redisstore.LayoutVersion))
}

// upgradeNote is the audit record's note of an upgrade.
func upgradeNote(r *redisstore.UpgradeReport) string {
	return fmt.Sprintf("layout %d -> %d: %d entries checked, %d re-indexed, %d corrupt kept, %d stray index members removed, %d status counters reset",
		r.From, r.To, r.Checked, r.Fixed, r.Corrupt, r.Strays, r.Counters)
}

func printUpgrade(w io.Writer, v *upgradeView) {
	switch {
	case v.Current:
		fmt.Fprintf(w, "namespace %q at %s is at layout version %d already: nothing to upgrade\n", v.Namespace, v.Redis, v.To)
		return
	case v.Empty:
		fmt.Fprintf(w, "namespace %q at %s holds no data: nothing to upgrade\n", v.Namespace, v.Redis)
		return
	}
	would, removed := "", "removed"
	if v.DryRun {
		would, removed = " (would be)", "(would be removed)"
	}
	fmt.Fprintf(w, "upgrade of namespace %q at %s: layout %d -> %d\n", v.Namespace, v.Redis, v.From, v.To)
	fmt.Fprintf(w, "  entries checked       %d\n", v.Checked)
	fmt.Fprintf(w, "  re-indexed            %d%s\n", v.Fixed, would)
	fmt.Fprintf(w, "  corrupt, kept         %d\n", v.Corrupt)
	fmt.Fprintf(w, "  stray index members   %d %s\n", v.Strays, removed)
	fmt.Fprintf(w, "  status counters reset %d%s\n", v.Counters, would)
	if v.DryRun {
		fmt.Fprintln(w, "dry run: nothing changed")
		return
	}
	fmt.Fprintf(w, "layout version %d written\n", v.To)
}

// checkLayout refuses a namespace whose Redis layout is newer than this
// faultline's (invalid input, exit 2, the message naming both versions);
// open calls it for every faultline dlq command.
func checkLayout(c *cobra.Command, s *redisstore.Store) error {
	return layoutRefusal(s.CheckLayout(c.Context()))
}

// layoutRefusal makes ErrNewerLayout invalid input, without a --help hint:
// the message says what to do.
func layoutRefusal(err error) error {
	if errors.Is(err, redisstore.ErrNewerLayout) {
		return &InvalidInputError{Err: err}
	}
	return err
}
