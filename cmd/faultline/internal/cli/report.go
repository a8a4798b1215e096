package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reports"
)

// The report formats --report and report render --to take.
var reportFormatNames = []string{"json", "junit", "md", "html"}

func newReportCommand() *cobra.Command {
	report := &cobra.Command{
		Use:   "report",
		Short: "Re-render a stored run's report, compare two runs, or merge a sharded run's shards",
	}
	var to, out string
	render := &cobra.Command{
		Use:   "render REPORT.json --to html|md|junit|json|text",
		Short: "Write a stored JSON report in another format",
		Long: `Read a report written by faultline run --report json and write it in another
format: html (one self-contained file), md (a pull-request summary), junit (XML for CI),
json, or text. Exit codes: 0 written; 2 the file is not a report faultline can read (it
says what is wrong and where).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(c, errors.New("report render needs one JSON report"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			r, err := readReport(args[0])
			if err != nil {
				return err
			}
			if out == "" {
				return writeFormat(c.OutOrStdout(), to, []*reports.Result{r}, colorFor(c.OutOrStdout()))
			}
			if err := checkRenderFormat(to); err != nil {
				return err // before the file is created
			}
			// The file's close is checked too: a write lost on close is
			// exit 2 naming the file, not a report that silently is not
			// there.
			return writeFile(out, func(w io.Writer) error { return writeFormat(w, to, []*reports.Result{r}, false) })
		},
	}
	render.Flags().StringVar(&to, "to", "", "the format: html, md, junit, json or text")
	render.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	report.AddCommand(render, newCheckCommand(), newMergeCommand())
	report.AddCommand(&cobra.Command{
		Use:   "diff OLD.json NEW.json",
		Short: "Tell what changed between two runs of the same scenario; exit 1 on a regression",
		Long: `Compare two reports of the same scenario (say, two versions of a team's handler):
expectations that flipped, invariant violations that appeared or went, dispositions that
moved, alert counts, a verdict that changed (to or from inconclusive too, with what
slipped). Exit codes: 0 no regression; 1 a regression (an expectation now failing, a new
violation, jobs lost, a worse verdict: passed, inconclusive, failed, then errored or
interrupted, best first); 2 a file is not a readable report, or the two reports are of
different scenarios (nothing to compare). Reports of version 1 (before a run went on past
its first violation) are read too.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usage(c, errors.New("report diff needs two JSON reports: OLD NEW"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			old, err := readReport(args[0])
			if err != nil {
				return err
			}
			cur, err := readReport(args[1])
			if err != nil {
				return err
			}
			if err := reports.Comparable(old, cur); err != nil {
				return &InvalidInputError{Err: fmt.Errorf("%s and %s: %w", args[0], args[1], err),
					Hint: "Try: faultline report diff OLD.json NEW.json with two runs of the same scenario"}
			}
			d := reports.Diff(reports.Redact(old), reports.Redact(cur)) // what it prints is masked
			if err := reports.WriteDiff(c.OutOrStdout(), d); err != nil {
				return err
			}
			if d.Regression {
				return fmt.Errorf("%s regressed: %w", args[1], ErrChecksFailed)
			}
			return nil
		},
	})
	return report
}

func readReport(path string) (*reports.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &InvalidInputError{Err: err}
	}
	defer f.Close()
	r, err := reports.Read(f)
	if err != nil {
		return nil, &InvalidInputError{Err: fmt.Errorf("%s: %w", path, err)}
	}
	return r, nil
}

// writeFormat writes rs in one format; json, html and text take one
// result.
func writeFormat(w io.Writer, format string, rs []*reports.Result, color bool) error {
	switch format {
	case "junit":
		return reports.WriteJUnit(w, rs)
	case "md":
		return reports.WriteMarkdown(w, rs)
	}
	if len(rs) != 1 {
		return fmt.Errorf("format %s takes one report, got %d", format, len(rs))
	}
	switch format {
	case "json":
		return reports.WriteJSON(w, rs[0])
	case "html":
		return reports.WriteHTML(w, rs[0])
	case "text":
		return reports.WriteText(w, rs[0], reports.TextOptions{Color: color, Verbose: true})
	}
	return checkRenderFormat(format)
}

// checkRenderFormat says whether report render --to takes format.
func checkRenderFormat(format string) error {
	switch format {
	case "junit", "md", "json", "html", "text":
		return nil
	}
	return &InvalidInputError{Err: fmt.Errorf("--to: expected html, md, junit, json or text, got %q", format), Hint: "Try: faultline report render --help"}
}

// colorFor says whether w is a terminal that wants colour (NO_COLOR unset).
func colorFor(w io.Writer) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}

func formatList() string { return strings.Join(reportFormatNames, ", ") }
