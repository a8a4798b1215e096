// Package cli is the faultline command tree. Commands take a context, their
// arguments and writers, so tests run them in-process and read their output.
//
// The files, a concern each:
//
//   - cli.go: the root command (New), the exit codes and the errors that
//     map to them (ExitCode).
//   - secrets.go: Main, which prints every error masked (masked), and the
//     Redis errors that mean unavailable (UnavailableError).
//   - redisflag.go: --redis-url, its forms and checks, and a Redis still
//     loading its data.
//   - limits.go: the input limits' flags (--max-*).
//   - scenario_cmds.go: `validate` and `list`.
//   - run.go: `run`: the scenarios and seeds to run, the runs in parallel,
//     the progress bar, the shrinking of failures, --dry-run.
//   - run_backend.go: `run --backend`: the store a run uses (memory,
//     miniredis, a real Redis).
//   - print.go: the verdicts as `run` prints them.
//   - stream.go: the reports a run writes, a run at a time (runSink).
//   - shard.go: `run --shard I/N`, and what a shard writes.
//   - merge.go: `merge`: shards' directories merged into one run's reports.
//   - outfile.go, outdir.go: output files (--output, --history) and the
//     report directory, checked before any run.
//   - shrunk.go: --shrunk-out, the one place a scenario's secrets are
//     written unmasked.
//   - report.go: `report render` and `report diff`.
//   - rules.go: `rules check` and `rules list`.
//   - drill.go: `drill`, `worker` and `report check`.
//   - drill_cleanup.go: `drill cleanup`.
//   - demo.go: `demo`.
//   - ui.go: `ui`, the DLQ's web UI.
//   - examples_gen.go: go generate of docs/examples/reports.
//   - dlq.go: `dlq`: its shared flags, connection, filters and
//     confirmation.
//   - dlq_namespace.go: the namespaces a Redis holds, and the note on an
//     empty one.
//   - dlq_record.go: the audit record every DLQ move writes.
//   - dlq_read.go: `dlq stats`, `dlq list`, `dlq show`.
//   - dlq_requeue.go: `dlq requeue`.
//   - dlq_manage.go: `dlq delete`, `restore`, `quarantine`, `purge`.
//   - dlq_edit.go: `dlq edit`.
//   - dlq_transfer.go: `dlq export` and `dlq import`.
//   - dlq_admin.go: `dlq audit` and `dlq upgrade`.
//   - dlq_seed.go: the seed layout (--layout seed): its flags, connection,
//     filters and entry refs.
//   - dlq_seed_read.go: `dlq list` and `dlq show` with --layout seed.
//   - dlq_seed_requeue.go: `dlq requeue` with --layout seed.
//   - dlq_migrate.go: `dlq migrate --from-layout seed`.
package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The exit codes, documented in --help and the README.
const (
	// ExitOK means everything passed.
	ExitOK = 0
	// ExitFailed means a check ran and failed; for faultline dlq, that an
	// import stopped at a full DLQ (DLQFullError).
	ExitFailed = 1
	// ExitInvalid means the input (a file, a flag) is invalid.
	ExitInvalid = 2
	// ExitInternal means faultline itself failed.
	ExitInternal = 3
	// ExitUnavailable means a service faultline needs could not be reached:
	// Redis, a system under test. Every command that talks to one maps a
	// network failure to it (see UnavailableError).
	ExitUnavailable = 4
	// ExitInconclusive means a drill could not judge the system: its
	// harness could not keep pace with its time scale (the verdict
	// inconclusive). Neither a pass nor a failure: a failed run in the
	// same batch wins (ExitFailed).
	ExitInconclusive = 5
)

// InvalidInputError marks an error caused by what the user gave: a bad flag,
// a malformed file. It maps to ExitInvalid.
type InvalidInputError struct {
	Err error
	// Hint is the next thing to try, e.g. "Try: faultline rules --help".
	Hint string
}

// Error returns the cause and the hint.
func (e *InvalidInputError) Error() string {
	if e.Hint == "" {
		return e.Err.Error()
	}
	return e.Err.Error() + "\n" + e.Hint
}

// Unwrap returns the cause.
func (e *InvalidInputError) Unwrap() error { return e.Err }

// ErrChecksFailed is returned when a command ran and what it checked failed.
var ErrChecksFailed = errors.New("checks failed")

// ErrInconclusive is returned, wrapped, when a command's runs include an
// inconclusive one (a drill whose harness could not keep pace with its
// time scale) and none failed: not a pass, not a failure. It maps to
// ExitInconclusive; an error that also wraps ErrChecksFailed maps to
// ExitFailed.
var ErrInconclusive = errors.New("inconclusive")

// errInconclusiveDrill is what drill and report check return for an
// inconclusive drill when none failed.
var errInconclusiveDrill = fmt.Errorf("%w: a drill's harness could not keep pace with its time scale (the report's slip says what and by how much): not a pass", ErrInconclusive)

// ExitCode maps an error returned by the command tree to the process's exit
// code.
func ExitCode(err error) int {
	var (
		invalid *InvalidInputError
		refused *RedisRefusedError
		full    *DLQFullError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &invalid), errors.As(err, &refused):
		return ExitInvalid
	case errors.As(err, &full):
		return ExitFailed
	case unreachable(err):
		return ExitUnavailable
	case errors.Is(err, ErrChecksFailed):
		return ExitFailed
	case errors.Is(err, ErrInconclusive):
		return ExitInconclusive
	default:
		return ExitInternal
	}
}

// New returns the root command writing to stdout and stderr.
func New(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "faultline",
		Short: "Prove that failed background jobs are never lost, the right people are paged, and services degrade instead of falling over",
		Long: `faultline is a chaos-testing harness and deterministic simulator for the
failure paths of background jobs.

Exit codes:
  0  everything passed
  1  a check ran and failed (faultline dlq: an import stopped at a full DLQ)
  2  invalid input (a file or a flag)
  3  an internal error
  4  a service faultline needs could not be reached (Redis, a system under test)
  5  inconclusive: a drill's harness could not keep pace with its time scale
     (neither a pass nor a failure; a failed run in the same call wins: 1)`,
		SilenceUsage:               true,
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 2,
	}
	root.Version = Version()
	quietRedisLogs()
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usage(c, plainFlagError(err)) })
	// Args and RunE on the root turn an unknown command into a usage error
	// with suggestions, instead of cobra's untyped one.
	root.Args = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		err := fmt.Errorf("unknown command %q", args[0])
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			err = fmt.Errorf("unknown command %q; did you mean %q?", args[0], s[0])
		}
		return usage(c, err)
	}
	root.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	root.AddCommand(newRunCommand(), newDrillCommand(), newWorkerCommand(), newValidateCommand(), newListCommand(), newReportCommand(), newRulesCommand(), newDemoCommand(), newDLQCommand())
	root.AddCommand(newUICommand())
	return root
}

// plainFlagError says what a flag takes instead of pflag's Go-internal
// parse error ("strconv.ParseInt: parsing "abc": invalid syntax").
func plainFlagError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) {
		return err
	}
	f := iv.GetFlag()
	want := f.Value.Type()
	switch want {
	case "int", "int64", "uint", "uint64":
		want = "a whole number"
	case "float64":
		want = "a number"
	case "duration":
		want = "a duration like 30s, 2m or 250ms"
	case "bool":
		want = "true or false"
	default:
		return err // the flag's own Value says what it takes
	}
	return fmt.Errorf("--%s takes %s, got %q", f.Name, want, iv.GetValue())
}

// usage wraps an argument error of c with a hint to its help.
func usage(c *cobra.Command, err error) error {
	return &InvalidInputError{Err: err, Hint: fmt.Sprintf("Try: %s --help", c.CommandPath())}
}

// Version returns faultline's version: the module version it was built
// at, or "devel" for a build from a working tree.
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// defaultBackend is the store commands use unless told otherwise.
const defaultBackend = "miniredis"

func sortedStrings(s []string) []string {
	slices.Sort(s)
	return s
}
