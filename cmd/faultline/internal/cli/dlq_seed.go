package cli

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/seed"
	"github.com/faultline/faultline/reference/classify"
	"github.com/faultline/faultline/reference/dlq"
	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
	"github.com/faultline/faultline/ui"
)

// seedStatuses are the statuses the tutorial's entries carry (an entry of
// a dlq:* list has none and reads as "failed").
var seedStatuses = []string{"failed", seed.Reprocessing, "deleted"}

// seedRefDigest is how many hex digits of the SHA-256 of an entry's bytes a
// ref carries.
const seedRefDigest = ui.SeedRefDigest

func addLayoutFlags(pf *pflag.FlagSet, g *dlqGlobal) {
	pf.StringVar(&g.layout, "layout", layout.PresetFaultline, "the DLQ's layout: "+layout.PresetFaultline+
		" (this tool's store), or "+layout.PresetSeed+" (the tutorial's dead_letter and dlq:* lists: list, show, requeue)")
	pf.StringVar(&g.prefix, "prefix", "", "the seed layout's key prefix, with --layout seed and migrate --from-layout seed (default none: dead_letter, dlq:*, default)")
}

// isSeed says --layout seed was asked for.
func (g *dlqGlobal) isSeed() bool { return g.layout == layout.PresetSeed }

// faultlineLayout refuses a --layout other than faultline's, and --prefix
// without the seed layout, for a command that works on faultline's layout.
func (g *dlqGlobal) faultlineLayout(c *cobra.Command) error {
	switch g.layout {
	case layout.PresetFaultline:
		if c.Flags().Changed("prefix") && c.Name() != "migrate" {
			return usage(c, errors.New("--prefix names the seed layout's keys: it goes with --layout seed (faultline's layout is chosen with --namespace)"))
		}
		return nil
	case layout.PresetSeed:
		return usage(c, fmt.Errorf("--layout seed: %s works on faultline's layout only; with --layout seed there are list, show and requeue, and faultline dlq migrate --from-layout seed moves the DLQ into faultline's layout", c.CommandPath()))
	}
	return usage(c, fmt.Errorf("--layout: unknown value %q (allowed: %s)", masked(g.layout), layout.PresetFaultline+", "+layout.PresetSeed))
}

// seedConn is an open seed DLQ.
type seedConn struct {
	rdb    *redis.Client
	target redisTarget
	prefix string
	// audit is faultline's store of the namespace whose audit stream
	// records the moves (--namespace, on the same Redis); nil where
	// nothing is moved (list, show).
	audit *dlqConn
}

// openSeed connects to the Redis holding the seed DLQ, to read it.
func (g *dlqGlobal) openSeed(c *cobra.Command) (*seedConn, error) { return g.openSeedAs(c, false) }

// openSeedAs connects to the Redis holding the seed DLQ; withAudit opens
// the --namespace store too, for its audit stream (requeue), and lets
// --namespace name it.
func (g *dlqGlobal) openSeedAs(c *cobra.Command, withAudit bool) (*seedConn, error) {
	if c.Flags().Changed("namespace") && !withAudit {
		return nil, usage(c, errors.New("--namespace names a namespace of faultline's layout; the seed layout's keys are chosen with --prefix"))
	}
	var cfg store.Config
	if withAudit {
		cfg = store.Config{Namespace: g.namespace}
		if err := cfg.Validate(); err != nil {
			return nil, usage(c, fmt.Errorf("--namespace %q (the namespace whose audit stream records a seed requeue): %w", masked(g.namespace), err))
		}
	}
	t, client, err := g.connect(c)
	if err != nil {
		return nil, err
	}
	s := &seedConn{rdb: client, target: t, prefix: g.prefix}
	if withAudit {
		st, err := redisstore.New(client, cfg)
		if err != nil {
			_ = client.Close()
			return nil, usage(c, err)
		}
		s.audit = &dlqConn{store: st, rdb: client, target: t, namespace: cfg.WithDefaults().Namespace, close: func() {}}
	}
	return s, nil
}

// record writes r into the audit stream of the --namespace the seed
// connection was opened with (dlqConn.record: a failure is said on
// stderr, and a bulk move refuses to start without its "started" record).
func (s *seedConn) record(c *cobra.Command, r dlq.AuditRecord) error {
	if s.audit == nil {
		return fmt.Errorf("audit %s: no audit stream opened", r.Action)
	}
	if r.Note == "" {
		r.Note = s.where()
	} else {
		r.Note = s.where() + ": " + r.Note
	}
	return s.audit.record(c, r)
}

// seedFilterSpec names f for an audit record, as the flags that made it.
func seedFilterSpec(f seed.Filter) string {
	parts := []string{"--layout seed"}
	if len(f.Lists) > 0 {
		parts = append(parts, "lists "+strings.Join(f.Lists, ","))
	}
	if len(f.Severities) > 0 {
		parts = append(parts, "--severity "+strings.Join(f.Severities, ","))
	}
	if len(f.Statuses) > 0 {
		parts = append(parts, "--status "+strings.Join(f.Statuses, ","))
	}
	if f.Text != "" {
		parts = append(parts, "--error-text "+strconv.Quote(masked(f.Text)))
	}
	return strings.Join(parts, " ")
}

// where names the seed DLQ for messages.
func (s *seedConn) where() string {
	if s.prefix == "" {
		return "the seed DLQ at " + s.target.printable()
	}
	return fmt.Sprintf("the seed DLQ (prefix %q) at %s", masked(s.prefix), s.target.printable())
}

// seedFilter maps the filter flags onto the seed layout's filter; flags the
// seed layout cannot apply are refused, named.
func seedFilter(c *cobra.Command, ff *filterFlags) (seed.Filter, error) {
	var no []string
	for _, x := range []struct {
		name string
		set  bool
	}{{"--task", len(ff.tasks) > 0}, {"--class", len(ff.classes) > 0}, {"--error-type", len(ff.errorTypes) > 0},
		{"--since", ff.since != ""}, {"--until", ff.until != ""}} {
		if x.set {
			no = append(no, x.name)
		}
	}
	if len(no) > 0 {
		return seed.Filter{}, usage(c, fmt.Errorf("%s: not available with --layout seed (its filters: --severity, --status, --error-text)", strings.Join(no, ", ")))
	}
	f := seed.Filter{Text: ff.text}
	for _, s := range ff.severities {
		v, err := classify.ParseSeverity(strings.TrimSpace(s))
		if err != nil {
			return f, usage(c, fmt.Errorf("--severity: %w", err))
		}
		f.Severities = append(f.Severities, v.String())
	}
	for _, s := range ff.statuses {
		s = strings.ToLower(strings.TrimSpace(s))
		if !slices.Contains(seedStatuses, s) {
			return f, usage(c, fmt.Errorf("--status: unknown status %q of the seed layout (allowed: %s)", masked(s), strings.Join(seedStatuses, ", ")))
		}
		f.Statuses = append(f.Statuses, s)
	}
	return f, nil
}

// seedRow is a seed entry as list prints it: the web UI's row, one
// rendering for both tools.
type seedRow = ui.SeedRow

func seedDigest(b []byte) string { return seed.Digest(b)[:seedRefDigest] }

// seedRefOf and seedRowOf are the web UI's (ui.SeedRefOf, ui.SeedRowOf).
var (
	seedRefOf = ui.SeedRefOf
	seedRowOf = ui.SeedRowOf
)

// seedRef is a parsed REF: LIST@POSITION[#DIGEST].
type seedRef struct {
	list   string
	pos    int64
	digest string
}

func (r seedRef) String() string {
	s := r.list + "@" + strconv.FormatInt(r.pos, 10)
	if r.digest != "" {
		s += "#" + r.digest
	}
	return s
}

// parseSeedRef reads a ref as list printed it; needDigest refuses one
// without its #DIGEST.
func parseSeedRef(c *cobra.Command, s string, needDigest bool) (seedRef, error) {
	bad := func(why string) (seedRef, error) {
		return seedRef{}, usage(c, fmt.Errorf("REF %q: %s; a REF is LIST@POSITION#DIGEST as faultline dlq list --layout seed prints it (e.g. dead_letter@12#%s)",
			masked(s), why, strings.Repeat("0", seedRefDigest)))
	}
	rest, digest, hasDigest := strings.Cut(s, "#")
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return bad("no @POSITION")
	}
	r := seedRef{list: rest[:at], digest: strings.ToLower(digest)}
	lists := append([]string{layout.SeedDeadLetter}, layout.SeedSeverityLists...)
	if !slices.Contains(lists, r.list) {
		return bad("no list " + strconv.Quote(r.list) + " in the seed layout (" + strings.Join(lists, ", ") + ")")
	}
	p, err := strconv.ParseInt(rest[at+1:], 10, 64)
	if err != nil || p < 0 {
		return bad("the position is not a number from 0")
	}
	r.pos = p
	if hasDigest {
		if _, err := hex.DecodeString(r.digest); err != nil || len(r.digest) != seedRefDigest {
			return bad("the digest is not " + strconv.Itoa(seedRefDigest) + " hex digits")
		}
	} else if needDigest {
		return bad("no #DIGEST, which is how a requeue knows the entry is still the one listed")
	}
	return r, nil
}

// get reads the entry r names, by its position and digest (seed.Get: one
// LINDEX, and a bounded look below the position when a trim moved it).
func (s *seedConn) get(ctx context.Context, r seedRef) (seed.Entry, seed.Where, error) {
	e, where, err := seed.Get(ctx, s.rdb, s.prefix, r.list, r.pos, r.digest)
	if err != nil {
		return seed.Entry{}, 0, fmt.Errorf("read %s: %w", r, err)
	}
	return e, where, nil
}
