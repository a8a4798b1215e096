package drill

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/drill/supervisor"
	"github.com/faultline/faultline/drill/workerproc"
	"github.com/faultline/faultline/layout"
	"github.com/faultline/faultline/layout/adapter"
	"github.com/faultline/faultline/oracle"
	"github.com/faultline/faultline/scenarios"
)

// The environment a black-box drill gives every command it starts (the
// system's copies and the adapters' commands), besides the placeholders
// of docs/plugging-in.md.
const (
	EnvRedisURL  = "FAULTLINE_REDIS_URL"
	EnvNamespace = "FAULTLINE_NAMESPACE"
	EnvWorker    = "FAULTLINE_WORKER"
	EnvTimeScale = "FAULTLINE_TIME_SCALE"
	EnvSlackURL  = "FAULTLINE_SLACK_URL"
	EnvDrillFile = "FAULTLINE_DRILL_FILE"
	// EnvClockOrigin is the wall instant (RFC 3339) from which a copy that
	// follows the time scale runs its clock faster: the same for every
	// copy and restart of a drill, so the copies agree on the time of day
	// (their leases, their leader's), which equals the wall clock's at it.
	EnvClockOrigin  = "FAULTLINE_CLOCK_ORIGIN"
	EnvDependencyAt = "FAULTLINE_DEPENDENCY_" // + the dependency's name, upper-cased, non-alphanumerics as _
	EnvReceiverAt   = "FAULTLINE_RECEIVER_"   // + the receiver's name, likewise
)

// DefaultReceiver is the receiver a black-box drill always starts, beside
// the scenario's: a Slack-compatible incoming webhook whose URL is
// FAULTLINE_SLACK_URL.
const DefaultReceiver = "slack"

// DrillFile is the JSON file a black-box drill writes for each copy of the
// system (FAULTLINE_DRILL_FILE): what the placeholders give, in one place.
type DrillFile struct {
	Namespace string  `json:"namespace"`
	RedisURL  string  `json:"redisURL"`
	Worker    string  `json:"worker"`
	TimeScale float64 `json:"timeScale"`
	// ClockOrigin is EnvClockOrigin's instant.
	ClockOrigin  time.Time                `json:"clockOrigin"`
	Dependencies map[string]string        `json:"dependencies"`
	Receivers    map[string]DrillReceiver `json:"receivers"`
}

// DrillReceiver is one receiver of a DrillFile.
type DrillReceiver struct {
	Kind string `json:"kind"`
	URL  string `json:"url"`
}

// extState is what a black-box drill adds to a drill.
type extState struct {
	x    *scenarios.ExternalSpec
	inj  adapter.Injector
	rd   adapter.Reader
	keys []string
	// jobKeys are a framework's keys of the drill's jobs outside its
	// queue (Celery's results, RQ's job hashes): absent at the start, so
	// the drill's to delete.
	jobKeys []string
	vars    map[string]string
	deps    map[string]string // call URLs by dependency
	rcvs    map[string]string // receiver URLs by name
	// clockOrigin is the copies' clock origin (EnvClockOrigin): when the
	// drill began.
	clockOrigin time.Time
	readMu      sync.Mutex
	cur         map[string]int // active entries by item key at the last read
	items       map[string]oracle.DLQItem
	entries     []layout.Entry
	read        bool
	x0          oracle.ExternalRun
	settled     int64
	quiet       bool // the drain ended settled and quiet
	// owns says every key check passed: the layout's keys under the
	// namespace, and the namespace's, are the drill's to delete.
	owns     bool
	jobsDone map[string]bool
}

var placeholder = regexp.MustCompile(`\{(namespace|redis|worker|timeScale|dependency:[^{}]+|receiver:[^{}]+)\}`)

// expand replaces the placeholders of s; worker names the copy ("" for
// an adapter's command).
func (e *extState) expand(s, worker string) string {
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		k := m[1 : len(m)-1]
		if k == "worker" {
			return worker
		}
		if v, ok := e.vars[k]; ok {
			return v
		}
		return m
	})
}

// unresolved names a placeholder of s that names no dependency or
// receiver of the drill.
func unresolved(s string) string {
	for _, m := range placeholder.FindAllString(s, -1) {
		if strings.HasPrefix(m, "{dependency:") || strings.HasPrefix(m, "{receiver:") {
			return m
		}
	}
	return ""
}

// configStrings are the external block's strings that may hold
// placeholders.
func (e *extState) configStrings() []string {
	var out []string
	cmd := func(c *layout.Command) {
		if c == nil {
			return
		}
		out = append(out, c.Path, c.Dir)
		out = append(out, c.Args...)
		for _, v := range c.Env {
			out = append(out, v)
		}
	}
	cmd(e.x.Command)
	in, dl := e.x.Inject, e.x.DLQ
	cmd(in.Command)
	cmd(dl.Command)
	if in.HTTP != nil {
		out = append(out, in.HTTP.URL)
	}
	if dl.HTTP != nil {
		out = append(out, dl.HTTP.URL)
	}
	return out
}

// environ is the FAULTLINE_* environment of a command (worker "" for an
// adapter's).
func (e *extState) environ(worker string) []string {
	env := []string{EnvRedisURL + "=" + e.vars["redis"], EnvNamespace + "=" + e.vars["namespace"], EnvTimeScale + "=" + e.vars["timeScale"],
		EnvClockOrigin + "=" + e.clockOrigin.Format(time.RFC3339Nano)}
	if worker != "" {
		env = append(env, EnvWorker+"="+worker)
	}
	for _, name := range sortedKeys(e.deps) {
		env = append(env, EnvDependencyAt+workerproc.EnvName(name)+"="+e.deps[name])
	}
	for _, name := range sortedKeys(e.rcvs) {
		env = append(env, EnvReceiverAt+workerproc.EnvName(name)+"="+e.rcvs[name])
		if name == DefaultReceiver {
			env = append(env, EnvSlackURL+"="+e.rcvs[name])
		}
	}
	return env
}

// spec is the supervisor's spec of copy name of the system.
func (e *extState) spec(d *drill, name string) (supervisor.Spec, error) {
	c := e.x.Command
	df := DrillFile{Namespace: d.ns, RedisURL: d.opts.RedisURL, Worker: name, TimeScale: d.opts.Scale, ClockOrigin: e.clockOrigin, Dependencies: e.deps, Receivers: map[string]DrillReceiver{}}
	for n, u := range e.rcvs {
		df.Receivers[n] = DrillReceiver{Kind: "slack", URL: u}
	}
	b, _ := json.MarshalIndent(df, "", "  ")
	path := filepath.Join(d.dir, name+".drill.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return supervisor.Spec{}, err
	}
	logf, err := os.Create(filepath.Join(d.dir, name+".log"))
	if err != nil {
		return supervisor.Spec{}, err
	}
	d.workerLogs = append(d.workerLogs, logf)
	env := append(os.Environ(), e.environ(name)...)
	env = append(env, EnvDrillFile+"="+path)
	for _, k := range sortedKeys(c.Env) {
		env = append(env, k+"="+e.expand(c.Env[k], name))
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = e.expand(a, name)
	}
	dir := e.expand(c.Dir, name)
	if dir == "" {
		dir = scenarioDir(d.l.Path)
	}
	return supervisor.Spec{Name: name, Path: e.expand(c.Path, name), Args: args, Env: env, Dir: dir, Stdout: logf, Stderr: logf}, nil
}

// describeState says which members of a hash or sorted-set queue count as
// queued.
func describeState(st *layout.QueueState) string {
	if st == nil {
		return "every member"
	}
	return st.Field + " in " + strings.Join(st.Queued, ", ")
}

// describeInject says what the inject adapter does, for the report.
func describeInject(in layout.Inject) string {
	if in.Preset == layout.PresetFaultline {
		return "faultline preset: the reference store's queue"
	}
	if fw, ok := layout.FrameworkOf(in.Preset); ok {
		o := in.FrameworkOptions()
		return fmt.Sprintf("%s preset: %s's own client, queue %s, job %s, options %s", fw.Name, fw.Title, o.Queue, cmp.Or(o.Job, "{task}"), o.Options)
	}
	r := in.Resolved()
	pre := ""
	if in.Preset != "" {
		pre = in.Preset + " preset: "
	}
	switch {
	case r.RedisList != nil:
		push := strings.ToUpper(r.RedisList.Push)
		if push == "" {
			push = "LPUSH"
		}
		return pre + push + " " + r.RedisList.Key
	case r.RedisStream != nil:
		if r.RedisStream.Group == "" {
			return pre + "XADD " + r.RedisStream.Key + " (no consumer group declared: the queue at the end is not observable)"
		}
		return pre + "XADD " + r.RedisStream.Key + ", read by group " + r.RedisStream.Group
	case r.RedisHash != nil:
		return pre + "HSET " + r.RedisHash.Key + " (queued: " + describeState(r.RedisHash.State) + ")"
	case r.RedisZSet != nil:
		return pre + "ZADD " + r.RedisZSet.Key + " (queued: " + describeState(r.RedisZSet.State) + ")"
	case r.HTTP != nil:
		return pre + "POST " + r.HTTP.URL
	case r.Command != nil:
		return pre + "JSON lines to " + r.Command.Path
	}
	return pre
}

// describeDLQ says where the DLQ adapter reads, for the report.
func describeDLQ(dl layout.DLQ) string {
	r := dl.Resolved()
	pre := ""
	if dl.Preset != "" {
		pre = dl.Preset + " preset: "
	}
	var s string
	switch {
	case dl.Preset == layout.PresetFaultline:
		s = "the reference store's DLQ"
	case layout.IsFramework(dl.Preset):
		fw, _ := layout.FrameworkOf(dl.Preset)
		s = fw.DeadLetters + ", queue " + dl.FrameworkOptions().Queue
	case r.RedisList != nil:
		s = "Redis lists " + strings.Join(r.RedisList.Keys, ", ")
	case r.RedisZSet != nil:
		s = "Redis sorted sets " + strings.Join(r.RedisZSet.Keys, ", ")
	case r.RedisStream != nil:
		s = "Redis stream " + r.RedisStream.Key
	case r.HTTP != nil:
		s = "GET " + r.HTTP.URL
	case r.Command != nil:
		s = "JSON lines from " + r.Command.Path
	}
	f := r.Fields
	s += " (job ID at " + f.ID
	if f.Severity != "" {
		s += ", severity at " + f.Severity
	}
	return pre + s + ")"
}

// urls are the adapters' HTTP URLs, expanded.
func (e *extState) urls() []string {
	var out []string
	if h := e.x.Inject.HTTP; h != nil {
		out = append(out, e.expand(h.URL, ""))
	}
	if h := e.x.DLQ.HTTP; h != nil {
		out = append(out, e.expand(h.URL, ""))
	}
	return out
}

// checkHTTPURL refuses an adapter's URL off loopback unless allowRemote:
// a drill sends its jobs to, and reads, only what it is told it may.
func checkHTTPURL(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("adapter URL %q: not an http:// URL", raw)
	}
	if !isLoopback(u.Hostname()) && !allowRemote {
		return fmt.Errorf("adapter URL %s: %s is not on loopback: a drill injects jobs into and reads only a system on loopback unless --allow-remote", u.Redacted(), u.Hostname())
	}
	return nil
}
