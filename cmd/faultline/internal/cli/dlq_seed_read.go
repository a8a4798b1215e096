package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/layout/seed"
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
