package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/classify"
)

func newRulesCommand() *cobra.Command {
	rules := &cobra.Command{
		Use:   "rules",
		Short: "Check and list classifier rule files",
	}
	rules.AddCommand(&cobra.Command{
		Use:   "check FILE...",
		Short: "Check classifier rule files; every problem is reported with file:line:col",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usage(c, errors.New("rules check needs at least one rule file"))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return checkRules(c.OutOrStdout(), c.ErrOrStderr(), args)
		},
	})
	var file string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the effective rule table in order (first match wins): the defaults, or a file's rules followed by them",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage(c, fmt.Errorf("rules list takes no arguments, got %q (use --file)", args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			rs := classify.RuleSet{Rules: classify.DefaultRules(), Fallback: classify.Fallback}
			if file != "" {
				var err error
				if rs, err = loadRules(file); err != nil {
					return err
				}
			}
			return listRules(c.OutOrStdout(), rs)
		},
	}
	list.Flags().StringVarP(&file, "file", "f", "", "a rule file to list instead of the defaults")
	rules.AddCommand(list)
	return rules
}

func loadRules(path string) (classify.RuleSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return classify.RuleSet{}, &InvalidInputError{Err: err}
	}
	rs, err := classify.ParseRules(path, data, nil)
	if err != nil {
		return classify.RuleSet{}, &InvalidInputError{Err: err}
	}
	return rs, nil
}

func checkRules(stdout, stderr io.Writer, files []string) error {
	var bad []string
	for _, f := range files {
		rs, err := loadRules(f)
		if err != nil {
			printErr(stderr, err)
			bad = append(bad, f)
			continue
		}
		fmt.Fprintf(stdout, "%s: ok, %d rules (first match wins), fallback %s\n", masked(f), len(rs.Rules), rs.Fallback)
	}
	if len(bad) > 0 {
		return &InvalidInputError{Err: fmt.Errorf("%d of %d rule files are invalid: %s", len(bad), len(files), strings.Join(bad, ", "))}
	}
	return nil
}

func listRules(w io.Writer, rs classify.RuleSet) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tNAME\tDEPENDENCY\tTASK\tVERDICT\tMATCH")
	scope := func(s string) string {
		if s == "" {
			return "*"
		}
		return s
	}
	for i, r := range rs.Rules {
		v := classify.Classification{Class: r.Class, Severity: r.Severity, Source: r.Source}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", i+1, r.Name, scope(r.Dependency), scope(r.Task), v, r.Match)
	}
	fmt.Fprintf(tw, "-\tfallback\t*\t*\t%s\tanything else\n", rs.Fallback)
	return tw.Flush()
}
