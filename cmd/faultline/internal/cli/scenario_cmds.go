package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/layout/adapter"
	"github.com/faultline/faultline/scenarios"
)

func newValidateCommand() *cobra.Command {
	var lf limitFlags
	var external string
	c := &cobra.Command{
		Use:   "validate (FILE | DIR | BUILTIN)...",
		Short: "Check scenario files; every problem is reported with file:line:col",
		Long: `Check scenario files (includes followed) without running them. Every problem in a
file is reported with file:line:col, what was expected, and a suggestion for a misspelt
key. A built-in scenario's name (faultline list) is checked as faultline run reads it.
A scenario includes files from its own folder and the folders below it only, unless
--allow-include-outside; a file that is not a scenario is never quoted.
Exit codes: 0 every file is valid; 2 a file is invalid.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(c, errors.New("validate needs scenario files or directories"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			lim, err := lf.limits()
			if err != nil {
				return usage(c, err)
			}
			return validate(c.OutOrStdout(), c.ErrOrStderr(), args, lim, external)
		},
	}
	lf.register(c.Flags())
	c.Flags().StringVar(&external, "external", "", "check each scenario with the system.external of `FILE`, as faultline drill --external runs it")
	return c
}

func validate(stdout, stderr io.Writer, args []string, lim scenarios.Limits, external string) error {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err == nil && st.IsDir() {
			fs, err := scenarioFiles(a, lim)
			if err != nil {
				return &InvalidInputError{Err: err}
			}
			if len(fs) == 0 {
				return &InvalidInputError{Err: fmt.Errorf("%s: nothing to check: no scenario files (*.yaml, *.yml) in this directory", a),
					Hint: "Try: faultline validate FILE.yaml, or a directory holding scenario files"}
			}
			files = append(files, fs...)
			continue
		}
		if err != nil && (isBuiltinName(a) || errors.Is(err, os.ErrNotExist) && !strings.ContainsAny(a, "/\\.")) {
			// A name with no file of that name is a built-in, as run
			// reads it (an unknown one is said as run says it).
			files = append(files, builtinPrefix+a)
			continue
		}
		files = append(files, a)
	}
	bad := 0
	for _, f := range files {
		var l *scenarios.Loaded
		var err error
		if name, ok := strings.CutPrefix(f, builtinPrefix); ok {
			if l, err = lim.LoadBuiltin(name); err != nil && !isBuiltinName(name) {
				err = fmt.Errorf("%q is neither a file nor a built-in scenario: %w", name, err)
			}
		} else {
			l, err = lim.Load(f)
		}
		if err == nil && external != "" {
			if l, err = scenarios.WithExternal(l, external); err != nil {
				err = fmt.Errorf("%s with --external %s:\n%w", f, external, err)
			}
		}
		if err != nil {
			printErr(stderr, err)
			bad++
			continue
		}
		fmt.Fprintf(stdout, "ok  %s  %s: %s\n", masked(f), masked(l.Scenario.Name), masked(l.Scenario.Description))
		if x := l.Scenario.System.External; x != nil {
			// A framework preset whose adapter cannot run here: the file
			// is valid, a drill of it on this machine would be refused.
			for _, w := range []string{adapter.RuntimeWarning(x.Inject.Preset, x.Inject.Runtime), adapter.RuntimeWarning(x.DLQ.Preset, x.DLQ.Runtime)} {
				if w != "" {
					fmt.Fprintf(stderr, "warning: %s: %s\n", masked(f), masked(w))
					break
				}
			}
		}
	}
	if bad > 0 {
		return &InvalidInputError{Err: fmt.Errorf("%d of %d scenario files are invalid", bad, len(files))}
	}
	return nil
}

// builtinPrefix marks a built-in scenario among validate's files, as run
// names its file.
const builtinPrefix = "builtin:"

// isBuiltinName reports whether a, which names no file, is a built-in
// scenario's name.
func isBuiltinName(a string) bool {
	for _, b := range scenarios.Builtins() {
		if b.Name == a {
			return true
		}
	}
	return false
}

func newListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the built-in scenarios, one a line: its name, then what it proves",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage(c, fmt.Errorf("list takes no arguments, got %q", args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(c.OutOrStdout(), 0, 0, 2, ' ', 0)
			for _, b := range scenarios.Builtins() {
				fmt.Fprintf(tw, "%s\t%s\n", b.Name, strings.TrimSpace(b.Description))
			}
			return tw.Flush()
		},
	}
}
