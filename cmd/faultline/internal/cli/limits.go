package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/scenarios"
)

// limitFlags are the input limits faultline run, validate and drill take:
// each error at a limit names the flag that lifts it.
type limitFlags struct {
	fileSize byteSize
	depth    int
	workers  int
	samples  int
	inFlight int
	duration durationLimit
	// includeOutside is --allow-include-outside.
	includeOutside bool
}

func (l *limitFlags) register(fl *pflag.FlagSet) {
	l.fileSize = scenarios.DefaultMaxFileSize
	fl.Var(&l.fileSize, "max-file-size", "the largest scenario, fragment or rule file read, e.g. 10MiB (checked before reading)")
	fl.IntVar(&l.depth, "max-depth", scenarios.DefaultMaxDepth, "the deepest nesting of a scenario file's values (checked before parsing)")
	fl.IntVar(&l.workers, "max-workers", scenarios.DefaultMaxWorkers, "the most worker slots a scenario may have")
	fl.IntVar(&l.samples, "max-samples", scenarios.DefaultMaxSamples, "the most points of a run's time series (duration / sample)")
	fl.IntVar(&l.inFlight, "max-in-flight", scenarios.DefaultMaxInFlight, "the most jobs a run tracks at once (created, not yet succeeded); a run past it is interrupted")
	l.duration = durationLimit(scenarios.DefaultMaxDuration)
	fl.Var(&l.duration, "max-duration", "the longest duration a scenario may have, e.g. 30d or 36h")
	fl.BoolVar(&l.includeOutside, "allow-include-outside", false, "let a scenario include files from anywhere (by default only from its own folder and the folders below it)")
}

// limits returns the limits, or a usage error for one that is not positive.
func (l *limitFlags) limits() (scenarios.Limits, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{{"--max-file-size", int64(l.fileSize)}, {"--max-depth", int64(l.depth)}, {"--max-workers", int64(l.workers)},
		{"--max-samples", int64(l.samples)}, {"--max-in-flight", int64(l.inFlight)}, {"--max-duration", int64(l.duration)}} {
		if f.v < 1 {
			return scenarios.Limits{}, fmt.Errorf("%s: expected at least 1, got %d", f.name, f.v)
		}
	}
	return scenarios.Limits{MaxFileSize: int64(l.fileSize), MaxDepth: l.depth, AllowIncludeOutside: l.includeOutside,
		Run: scenarios.RunLimits{MaxWorkers: l.workers, MaxSamples: l.samples, MaxInFlight: l.inFlight, MaxDuration: time.Duration(l.duration)}}, nil
}

// byteSize is a flag of bytes: 1048576, 512KiB, 10MiB, 1GiB (KB, MB, GB
// are read as the binary units too).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Type() string { return "bytes" }

func (b *byteSize) Set(s string) error {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.n
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 1 || n > (1<<62)/mult {
		return fmt.Errorf("expected a size like 10MiB or 1048576, got %q", s)
	}
	*b = byteSize(n * mult)
	return nil
}

// durationLimit is a flag of a positive duration: 36h, 90m, or days (30d,
// 1.5d), up to time.Duration's largest.
type durationLimit time.Duration

const day = 24 * time.Hour

func (d *durationLimit) String() string {
	if v := time.Duration(*d); v%day == 0 {
		return strconv.FormatInt(int64(v/day), 10) + "d"
	}
	return time.Duration(*d).String()
}

func (d *durationLimit) Type() string { return "duration" }

func (d *durationLimit) Set(s string) error {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("expected a positive duration like 30d, 36h or 90m, got %q", s)
	if days, ok := strings.CutSuffix(t, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || !(n > 0) || n*float64(day) >= math.MaxInt64 {
			return bad
		}
		*d = durationLimit(n * float64(day))
		return nil
	}
	v, err := time.ParseDuration(t)
	if err != nil || v <= 0 {
		return bad
	}
	*d = durationLimit(v)
	return nil
}
