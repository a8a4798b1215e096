package drill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/reference/store"
	"github.com/faultline/faultline/reference/store/redisstore"
)

// Claim is what a drill writes in its namespace's claim key
// (`{faultline:NS}:drill`) before it writes anything else: which drill, in
// which process, on which host, since when. It lets `faultline drill
// cleanup` tell a namespace left by a drill that is gone (SIGKILLed, its
// machine rebooted) from one whose drill still runs. Encoded as a small JSON
// document (EncodeClaim); a claim of an older faultline, a plain sentence,
// is still read (ParseClaim).
type Claim struct {
	// Scenario is the drilled scenario's name.
	Scenario string `json:"scenario"`
	// PID is the drill's process ID, on Host.
	PID int `json:"pid"`
	// Host is the drill's os.Hostname.
	Host string `json:"host"`
	// Started is when the drill claimed the namespace.
	Started time.Time `json:"started"`
	// Version is the faultline version that wrote the claim ("devel" for
	// a build from a working tree).
	Version string `json:"version,omitempty"`
	// Dir is the drill's temporary work folder (its processes' drill
	// files and logs), removed with the namespace by cleanup; "" when the
	// drill was given its folder.
	Dir string `json:"dir,omitempty"`
	// BootID is the host's /proc/sys/kernel/random/boot_id: a claim made
	// before the host last booted names a process that is gone.
	BootID string `json:"bootId,omitempty"`
	// PIDNamespace is the drill's PID namespace (/proc/self/ns/pid), so
	// that two containers of one hostname and one kernel are not taken
	// for one host.
	PIDNamespace string `json:"pidNamespace,omitempty"`
	// StartTicks is the drill process's start time (/proc/PID/stat's
	// starttime field, in clock ticks since boot): a process of the same
	// PID with another start time is not the drill (the PID was reused).
	StartTicks uint64 `json:"startTicks,omitempty"`

	// Legacy says the claim is the plain sentence of an older faultline
	// ("faultline drill of S, pid N"): Scenario and PID are read from it,
	// the host was not recorded.
	Legacy bool `json:"-"`
}

// ErrNotAClaim is matched by the error of ParseClaim for a value that is
// neither a claim of this faultline nor one of an older one.
var ErrNotAClaim = errors.New("not a faultline drill claim")

// legacyClaim is the claim an older faultline wrote.
var legacyClaim = regexp.MustCompile(`^faultline drill of (.*), pid (\d+)$`)

// EncodeClaim returns c as the claim key's value.
func EncodeClaim(c Claim) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode the drill's claim: %w", err)
	}
	return string(b), nil
}

// ParseClaim reads a claim key's value: a JSON claim, or the plain sentence
// of an older faultline (Legacy set). Anything else is ErrNotAClaim.
func ParseClaim(v string) (Claim, error) {
	v = strings.TrimSpace(v)
	if m := legacyClaim.FindStringSubmatch(v); m != nil {
		pid, err := strconv.Atoi(m[2])
		if err != nil || pid <= 0 {
			return Claim{}, fmt.Errorf("%w: pid %q", ErrNotAClaim, m[2])
		}
		return Claim{Scenario: m[1], PID: pid, Legacy: true}, nil
	}
	if !strings.HasPrefix(v, "{") {
		return Claim{}, ErrNotAClaim
	}
	var c Claim
	dec := json.NewDecoder(bytes.NewReader([]byte(v)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Claim{}, fmt.Errorf("%w: %w", ErrNotAClaim, err)
	}
	if c.PID <= 0 || c.Host == "" {
		return Claim{}, fmt.Errorf("%w: it names no pid and host", ErrNotAClaim)
	}
	return c, nil
}

// String describes the drill c names, for a person: "drill of S, pid N on
// host H, started T".
func (c Claim) String() string {
	if c.Legacy {
		return fmt.Sprintf("drill of %s, pid %d (its host not recorded)", c.Scenario, c.PID)
	}
	s := fmt.Sprintf("drill of %s, pid %d on host %s", c.Scenario, c.PID, c.Host)
	if !c.Started.IsZero() {
		s += ", started " + c.Started.UTC().Format(time.RFC3339)
	}
	if c.Version != "" {
		s += ", faultline " + c.Version
	}
	return s
}

// Host is the identity of the machine (and PID namespace) a drill runs
// on, and how to read a process's start time there: what a claim is
// checked against.
type Host struct {
	// Name is os.Hostname.
	Name string
	// BootID and PIDNamespace are as in Claim ("" where unknown).
	BootID, PIDNamespace string
	// Process reads process pid: whether it exists (a zombie does not),
	// and its start time in clock ticks since boot (0 where unknown).
	Process func(pid int) (alive bool, startTicks uint64, err error)
}

// LocalHost returns this machine's Host. Only its name is needed; what
// cannot be read on this system is left empty.
func LocalHost() (Host, error) {
	name, err := os.Hostname()
	if err != nil {
		return Host{}, fmt.Errorf("read the hostname: %w", err)
	}
	h := Host{Name: name}
	if runtime.GOOS == "linux" { // drills run on Linux only; elsewhere Check says Unknown
		h.Process = readProcess
	}
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		h.BootID = strings.TrimSpace(string(b))
	}
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		h.PIDNamespace = ns
	}
	return h, nil
}

// NewClaim returns the claim of a drill of scenario run by this process
// on h, at now.
func NewClaim(scenario string, h Host, now time.Time) Claim {
	c := Claim{Scenario: scenario, PID: os.Getpid(), Host: h.Name, Started: now.UTC().Truncate(time.Second), Version: faultlineVersion(),
		BootID: h.BootID, PIDNamespace: h.PIDNamespace}
	if h.Process != nil {
		if _, st, err := h.Process(c.PID); err == nil {
			c.StartTicks = st
		}
	}
	return c
}

// faultlineVersion is the module version faultline was built at, or
// "devel" (with the commit, when the build recorded one).
func faultlineVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel " + s.Value[:12]
		}
	}
	return "devel"
}

// readProcess reads /proc/PID/stat (Linux): whether the process exists and
// is not a zombie, and its start time.
func readProcess(pid int) (bool, uint64, error) {
	if pid <= 0 {
		return false, 0, nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, fmt.Errorf("read process %d: %w", pid, err)
	}
	// pid (comm) state ppid ... starttime is field 22; comm may hold
	// spaces and parentheses, so fields are counted after its last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return false, 0, fmt.Errorf("read process %d: /proc/%d/stat has no command field", pid, pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return false, 0, fmt.Errorf("read process %d: /proc/%d/stat has %d fields after the command", pid, pid, len(f))
	}
	if f[0] == "Z" || f[0] == "X" { // dead, not yet reaped by its parent
		return false, 0, nil
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return false, 0, fmt.Errorf("read process %d: starttime %q: %w", pid, f[19], err)
	}
	return true, st, nil
}

// Liveness says whether the drill a namespace's claim names still runs.
type Liveness int

// The Liveness values.
const (
	// Unclaimed: the namespace has no claim key (it may not be a drill's).
	Unclaimed Liveness = iota
	// Gone: the claim names a drill of this host that no longer runs (no
	// such process, another process of the same PID, or a boot since).
	Gone
	// Running: the drill the claim names runs on this host.
	Running
	// OtherHost: the claim names a drill of another host (or another PID
	// namespace of this one), whose processes cannot be seen from here.
	OtherHost
	// Unknown: the claim cannot be judged: an older faultline's, which did
	// not record its host, or a value that is not a claim.
	Unknown
)

// String names l as `drill cleanup` prints it.
func (l Liveness) String() string {
	switch l {
	case Unclaimed:
		return "no claim"
	case Gone:
		return "gone"
	case Running:
		return "running"
	case OtherHost:
		return "on another host"
	case Unknown:
		return "unknown"
	}
	return "Liveness(" + strconv.Itoa(int(l)) + ")"
}

// ClaimStatus is what is known of a namespace's claim.
type ClaimStatus struct {
	// Namespace is the namespace.
	Namespace string
	// Claim is its claim (nil: none, or a value that is not a claim).
	Claim *Claim
	// Raw is the claim key's value as read ("" when there is none).
	Raw string
	// Liveness is the verdict; Reason says how it was reached ("no
	// process 4242 runs on this host").
	Liveness Liveness
	Reason   string
}

// Describe says, in one sentence, who claimed the namespace and whether
// that drill still runs.
func (s ClaimStatus) Describe() string {
	switch {
	case s.Liveness == Unclaimed:
		return "it has no drill claim (" + claimKey(s.Namespace) + "), so it may not be a drill's"
	case s.Claim == nil:
		return "its claim key holds something that is not a faultline drill claim"
	case s.Claim.Legacy:
		return "it was claimed by an older faultline: " + s.Claim.String() + "; " + s.Reason
	}
	switch s.Liveness {
	case Gone:
		return "its claim names a drill that is gone: " + s.Claim.String() + "; " + s.Reason
	case Running:
		return "its claim names a drill still running: " + s.Claim.String() + "; " + s.Reason
	default:
		return "its claim names a drill on another host: " + s.Claim.String() + "; " + s.Reason
	}
}

// Check says whether the drill c names still runs, seen from h.
func (c Claim) Check(h Host) (Liveness, string, error) {
	if c.Legacy {
		return Unknown, "whether it still runs cannot be told", nil
	}
	if c.Host != h.Name {
		return OtherHost, fmt.Sprintf("this is host %s: whether it still runs cannot be seen from here", h.Name), nil
	}
	if c.BootID != "" && h.BootID != "" && c.BootID != h.BootID {
		// A reboot, or another machine of the same name: not told apart,
		// so not deleted without --force.
		return OtherHost, fmt.Sprintf("its boot id %s is not this host's %s (the host rebooted since, or it is another machine of the same name)", c.BootID, h.BootID), nil
	}
	if c.PIDNamespace != "" && h.PIDNamespace != "" && c.PIDNamespace != h.PIDNamespace {
		return OtherHost, fmt.Sprintf("it ran in PID namespace %s, this is %s (another container): its processes cannot be seen from here", c.PIDNamespace, h.PIDNamespace), nil
	}
	if h.Process == nil {
		return Unknown, "this system cannot tell which processes run", nil
	}
	alive, st, err := h.Process(c.PID)
	if err != nil {
		return Unknown, "", err
	}
	switch {
	case !alive:
		return Gone, fmt.Sprintf("no process %d runs on this host", c.PID), nil
	case c.StartTicks != 0 && st != 0 && st != c.StartTicks:
		return Gone, fmt.Sprintf("process %d is another process (it started at tick %d, the drill at %d): the pid was reused", c.PID, st, c.StartTicks), nil
	}
	return Running, fmt.Sprintf("process %d runs on this host", c.PID), nil
}

// ReadClaim reads namespace ns's claim from rdb and checks it against h.
func ReadClaim(ctx context.Context, rdb redis.UniversalClient, ns string, h Host) (ClaimStatus, error) {
	s := ClaimStatus{Namespace: ns}
	v, err := rdb.Get(ctx, claimKey(ns)).Result()
	s.Raw = v
	if errors.Is(err, redis.Nil) {
		s.Liveness, s.Reason = Unclaimed, "no claim key"
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read the claim of namespace %s: %w", ns, err)
	}
	c, err := ParseClaim(v)
	if err != nil {
		s.Liveness, s.Reason = Unknown, err.Error()
		return s, nil
	}
	s.Claim = &c
	if s.Liveness, s.Reason, err = c.Check(h); err != nil {
		return s, fmt.Errorf("check the claim of namespace %s: %w", ns, err)
	}
	return s, nil
}

// CleanupOptions configure CleanNamespace and CleanStale.
type CleanupOptions struct {
	// Host is this machine (LocalHost).
	Host Host
	// Force removes a namespace whose claim is on another host, cannot be
	// judged, or is missing. A drill still running on this host is never
	// removed.
	Force bool
	// DryRun says what would be removed and removes nothing.
	DryRun bool
}

// CleanupResult is what cleanup did with one namespace.
type CleanupResult struct {
	ClaimStatus
	// Removed says its keys were removed (or, on a dry run, would be).
	Removed bool
	// Keys is how many keys it held (the drill's canary namespace's
	// included).
	Keys int
	// Dir is the drill's temporary work folder removed with them (or, on
	// a dry run, that would be): "" when it had none, or none is left.
	Dir string
}

// CleanNamespace removes namespace ns's keys — the drill's canary
// namespace's (NS-canary) too — if its claim names a drill that is gone.
// It refuses (*RefusedError, matched by ErrRefused) a namespace whose drill
// still runs on this host, and, unless opts.Force, one whose claim is on
// another host or cannot be judged, or that holds keys and no claim. The
// claim is removed last, only if it still holds what was read, so that an
// interrupted cleanup can be run again.
func CleanNamespace(ctx context.Context, rdb redis.UniversalClient, ns string, opts CleanupOptions) (CleanupResult, error) {
	if err := (store.Config{Namespace: ns}).Validate(); err != nil {
		return CleanupResult{}, fmt.Errorf("namespace %q: %w", ns, err)
	}
	st, err := ReadClaim(ctx, rdb, ns, opts.Host)
	if err != nil {
		return CleanupResult{}, err
	}
	res := CleanupResult{ClaimStatus: st}
	pats, err := drillPatterns(ctx, rdb, ns)
	if err != nil {
		return res, err
	}
	if res.Keys, err = countKeys(ctx, rdb, ns, pats); err != nil {
		return res, err
	}
	if res.Keys == 0 {
		return res, nil
	}
	refuse := func(why string) error {
		return &RefusedError{Part: "namespace " + ns, Reason: st.Describe() + why}
	}
	switch st.Liveness {
	case Gone:
	case Running:
		return res, refuse(fmt.Sprintf(": its keys are in use; stop the drill (kill %d on %s: it removes its keys itself on SIGTERM or Ctrl-C)", st.Claim.PID, st.Claim.Host))
	case OtherHost:
		if !opts.Force {
			return res, refuse(": run the cleanup on that host, or pass --force once you know that drill is gone")
		}
	default:
		if !opts.Force {
			return res, refuse(": pass --force once you know no drill uses it")
		}
	}
	res.Removed = true
	res.Dir = workDir(st)
	if opts.DryRun {
		return res, nil
	}
	if err := removeNamespace(ctx, rdb, ns, pats, st); err != nil {
		return res, err
	}
	if res.Dir != "" {
		if err := os.RemoveAll(res.Dir); err != nil {
			return res, fmt.Errorf("remove the drill's work folder %s: %w", res.Dir, err)
		}
	}
	return res, nil
}

// workDir is the temporary work folder st's drill left on this host: the
// claim's Dir, when the drill is gone from this host (a claim of another
// host names a folder there), the folder is still here, and it is one a
// drill makes (faultline-drill-*, an absolute path).
func workDir(st ClaimStatus) string {
	if st.Claim == nil || st.Liveness != Gone || st.Claim.Dir == "" {
		return ""
	}
	d := st.Claim.Dir
	if !filepath.IsAbs(d) || !strings.HasPrefix(filepath.Base(d), "faultline-drill-") {
		return ""
	}
	// A claim in a shared Redis could name any folder: only one that holds
	// a drill's files alone (its processes' configurations and logs) goes.
	entries, err := os.ReadDir(d)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !drillFileRe.MatchString(e.Name()) {
			return ""
		}
	}
	return d
}

// drillFileRe matches the files a drill writes in its work folder: each
// process's configuration (wN.json, or a black box's wN.drill.json), its
// log, and the adapters' log.
var drillFileRe = regexp.MustCompile(`^(w\d+(\.drill)?\.json|w\d+\.log|adapters\.log)$`)

// CleanStale finds every drill claim in rdb's database and removes each
// namespace whose drill is gone (CleanNamespace, never forced); the others
// are kept, each with its reason. The results are in the order found.
func CleanStale(ctx context.Context, rdb redis.UniversalClient, opts CleanupOptions) ([]CleanupResult, error) {
	opts.Force = false
	// "{faultline:" and "}:drill", around the namespace.
	prefix, end, _ := strings.Cut(claimKey("\x00"), "\x00")
	var out []CleanupResult
	seen := map[string]bool{}
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, prefix+"*"+end, 1000).Result()
		if err != nil {
			return out, fmt.Errorf("scan for drill claims: %w", err)
		}
		for _, k := range keys {
			ns, ok := strings.CutSuffix(strings.TrimPrefix(k, prefix), end)
			if !ok || seen[ns] || claimKey(ns) != k || (store.Config{Namespace: ns}).Validate() != nil {
				continue
			}
			seen[ns] = true
			res, err := CleanNamespace(ctx, rdb, ns, opts)
			if err != nil && !errors.Is(err, ErrRefused) {
				return out, err
			}
			out = append(out, res)
		}
		if cursor = next; cursor == 0 {
			return out, nil
		}
	}
}

// countKeys counts the keys matching pats.
func countKeys(ctx context.Context, rdb redis.UniversalClient, ns string, pats []string) (int, error) {
	n := 0
	for _, p := range pats {
		var cursor uint64
		for {
			keys, next, err := rdb.Scan(ctx, cursor, p, 1000).Result()
			if err != nil {
				return n, fmt.Errorf("count the keys of namespace %s: %w", ns, err)
			}
			n += len(keys)
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return n, nil
}

// drillPatterns are the SCAN patterns of a drill's keys: its namespace's
// and its canary namespace's (a drill killed during its canary leaves that
// behind) — unless NS-canary is a namespace claimed by a drill of its own.
func drillPatterns(ctx context.Context, rdb redis.UniversalClient, ns string) ([]string, error) {
	pats := []string{redisstore.Prefix(ns) + "*"}
	n, err := rdb.Exists(ctx, claimKey(ns+"-canary")).Result()
	if err != nil {
		return nil, fmt.Errorf("look for namespace %s's canary: %w", ns, err)
	}
	if n == 0 {
		pats = append(pats, redisstore.Prefix(ns+"-canary")+"*")
	}
	return pats, nil
}

// deleteClaimScript removes a claim only if it still holds what cleanup
// read.
//
// KEYS[1]: the claim key. ARGV[1]: the value read ("" for none).
// Returns 1 when removed, 0 when the key holds something else (another
// drill claimed the namespace meanwhile) and is left.
var deleteClaimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == false then return 1 end
if v ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)

// removeNamespace unlinks every key of ns (its canary's too) but the claim,
// in batches, then the claim, compare-and-delete.
func removeNamespace(ctx context.Context, rdb redis.UniversalClient, ns string, pats []string, st ClaimStatus) error {
	ck := claimKey(ns)
	for _, p := range pats {
		var cursor uint64
		for {
			keys, next, err := rdb.Scan(ctx, cursor, p, 1000).Result()
			if err != nil {
				return fmt.Errorf("remove namespace %s: %w", ns, err)
			}
			keys = slices.DeleteFunc(keys, func(k string) bool { return k == ck })
			if len(keys) > 0 {
				if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
					return fmt.Errorf("remove namespace %s: %w", ns, err)
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	n, err := deleteClaimScript.Run(ctx, rdb, []string{ck}, st.Raw).Int()
	if err != nil {
		return fmt.Errorf("remove the claim of namespace %s: %w", ns, err)
	}
	if n == 0 {
		return fmt.Errorf("remove the claim of namespace %s: it changed while its keys were removed (another drill claimed it?); left as it is", ns)
	}
	return nil
}

// CleanupCommand is the `faultline drill cleanup` command line that
// removes namespace ns of the Redis at redisURL: its address and database,
// never a password (a URL that gives one says so).
func CleanupCommand(redisURL string, allowRemote bool, ns string, force bool) string {
	addr, password := redisURL, false
	if strings.Contains(redisURL, "://") {
		if u, err := url.Parse(redisURL); err == nil {
			password = u.User != nil
			u.User = nil
			addr = u.String()
		} else {
			addr = "URL"
		}
	}
	cmd := "faultline drill cleanup --namespace " + ns + " --redis-url " + addr
	if allowRemote {
		cmd += " --allow-remote"
	}
	if force {
		cmd += " --force"
	}
	if password {
		cmd += " (with the URL's password)"
	}
	return cmd
}

// CleanupHint says how to remove a namespace of status st: the command,
// and when it needs --force or would be refused.
func CleanupHint(redisURL string, allowRemote bool, st ClaimStatus) string {
	ns := st.Namespace
	switch {
	case st.Liveness == Gone:
		return "Remove its keys with: " + CleanupCommand(redisURL, allowRemote, ns, false)
	case st.Liveness == Running:
		return "Once it has stopped, remove what it left with: " + CleanupCommand(redisURL, allowRemote, ns, false)
	case st.Liveness == OtherHost:
		return "Run on that host: " + CleanupCommand(redisURL, allowRemote, ns, false) + " — or, once you know that drill is gone, add --force here"
	default:
		return "If nothing uses these keys, remove them with: " + CleanupCommand(redisURL, allowRemote, ns, true)
	}
}
