package adapter

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/faultline/faultline/layout"
)

// presetPrograms are the framework presets' adapter programs (presets/,
// whose README says what each does): one file per framework, run as
// RUNTIME PROGRAM MODE.
//
//go:embed presets
var presetPrograms embed.FS

// The environment of a framework preset's adapter program.
const (
	EnvPresetQueue   = "FAULTLINE_PRESET_QUEUE"
	EnvPresetJob     = "FAULTLINE_PRESET_JOB"
	EnvPresetOptions = "FAULTLINE_PRESET_OPTIONS"
	EnvPresetPrefix  = "FAULTLINE_PRESET_PREFIX"
	EnvPresetDir     = "FAULTLINE_PRESET_DIR"
	EnvPresetCopies  = "FAULTLINE_PRESET_COPIES"
)

// ErrRuntime is matched by the error of CheckRuntime when a framework
// preset's adapter cannot run: its runtime is not installed, or the
// framework's library cannot be loaded.
var ErrRuntime = errors.New("framework runtime missing")

// ErrForeignLayout is matched by the error of CheckFramework when a
// framework's keys hold something that framework does not keep there.
var ErrForeignLayout = errors.New("not the framework's layout")

// ProgramSource returns the adapter program of framework preset name, as
// embedded.
func ProgramSource(name string) ([]byte, error) {
	f, ok := layout.FrameworkOf(name)
	if !ok {
		return nil, fmt.Errorf("%q: %w: not a framework preset", name, layout.ErrConfig)
	}
	return presetPrograms.ReadFile("presets/" + f.Program)
}

// frameworkProgram is a framework preset's adapter program written to a
// folder of its own, with the environment its modes share.
type frameworkProgram struct {
	fw     layout.Framework
	dir    string // the temporary folder holding the program
	base   commandSpec
	queue  string
	prefix string
}

// newFrameworkProgram writes the program of preset fw to a fresh
// temporary folder (removed by close) and resolves its command.
func newFrameworkProgram(fw layout.Framework, o layout.FrameworkOptions, env Env) (*frameworkProgram, error) {
	src, err := ProgramSource(fw.Name)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "faultline-"+fw.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("%s preset: %w", fw.Name, err)
	}
	prog := filepath.Join(dir, fw.Program)
	if err := os.WriteFile(prog, src, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s preset: %w", fw.Name, err)
	}
	base, err := filepath.Abs(env.Dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s preset: base folder %q: %w", fw.Name, env.Dir, err)
	}
	libDir := inFolder(base, env.expand(o.Dir))
	cenv := map[string]string{EnvPresetQueue: o.Queue, EnvPresetJob: o.Job, EnvPresetOptions: o.Options,
		EnvPresetPrefix: o.Prefix, EnvPresetDir: libDir}
	spec, err := newCommandSpec(layout.Command{Path: o.Runtime, Args: []string{prog}, Env: cenv, Dir: libDir}, env)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s preset: %w", fw.Name, err)
	}
	return &frameworkProgram{fw: fw, dir: dir, base: spec, queue: env.expand(o.Queue), prefix: env.expand(o.Prefix)}, nil
}

// mode is the program's command for mode, with extra environment.
func (p *frameworkProgram) mode(mode string, extra ...string) commandSpec {
	s := p.base
	s.args = append(slices.Clone(s.args), mode)
	s.env = append(slices.Clone(s.env), extra...)
	return s
}

func (p *frameworkProgram) close() error { return os.RemoveAll(p.dir) }

// CheckRuntime runs the adapter program of in's framework preset in its
// version mode: it says the framework and version it loaded, or why it
// cannot run (matching ErrRuntime, with the install line). Nil error and
// "" for a preset that is not a framework's.
func CheckRuntime(ctx context.Context, preset string, o layout.FrameworkOptions, env Env) (string, error) {
	fw, ok := layout.FrameworkOf(preset)
	if !ok {
		return "", nil
	}
	p, err := newFrameworkProgram(fw, o, env)
	if err != nil {
		return "", err
	}
	defer p.close()
	spec := p.mode("version")
	if !strings.ContainsRune(spec.path, '/') {
		return "", fmt.Errorf("the %s preset runs its adapter with %s, which is not on PATH: %w (install: %s)", fw.Name, spec.path, ErrRuntime, fw.Install)
	}
	if _, err := os.Stat(spec.path); err != nil {
		return "", fmt.Errorf("the %s preset runs its adapter with %s: %w: %w (install: %s)", fw.Name, spec.path, ErrRuntime, err, fw.Install)
	}
	ctx, cancel := context.WithTimeout(ctx, CommandReadTimeout)
	defer cancel()
	cmd := spec.command(ctx)
	out := &limited{max: 4096}
	errTail := &tail{}
	cmd.Stdout, cmd.Stderr = out, errTail
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("the %s preset's adapter (%s) could not load %s: %w: %v%s (install: %s)", fw.Name, spec, fw.Title, ErrRuntime, err, stderrNote(errTail), fw.Install)
	}
	return strings.TrimSpace(out.String()), nil
}

// frameworkKeys are preset's keys for queue, expanded.
func frameworkKeys(preset string, o layout.FrameworkOptions, env Env) []layout.FrameworkKey {
	keys := layout.FrameworkKeys(preset, env.expand(o.Queue), env.expand(o.Prefix))
	return keys
}

// CheckFramework refuses a Redis where in's (or d's) framework keys hold
// what the framework does not keep there — a key of another type, a
// BullMQ queue of another version, a shared set holding this queue's jobs
// already — naming what it found (an error matching ErrForeignLayout).
// Presets that are not a framework's pass.
func CheckFramework(ctx context.Context, in layout.Inject, d layout.DLQ, env Env) error {
	var keys []layout.FrameworkKey
	name := ""
	if layout.IsFramework(in.Preset) {
		name = in.Preset
		keys = append(keys, frameworkKeys(in.Preset, in.FrameworkOptions(), env)...)
	}
	if layout.IsFramework(d.Preset) {
		name = d.Preset
		keys = append(keys, frameworkKeys(d.Preset, d.FrameworkOptions(), env)...)
	}
	if len(keys) == 0 {
		return nil
	}
	if env.Redis == nil {
		return fmt.Errorf("the %s preset: %w: no Redis client", name, ErrEnv)
	}
	fw, _ := layout.FrameworkOf(name)
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.Key] {
			continue
		}
		seen[k.Key] = true
		typ, err := env.Redis.Type(ctx, k.Key).Result()
		if err != nil {
			return fmt.Errorf("TYPE %s: %w", k.Key, err)
		}
		if typ == "none" {
			continue
		}
		if typ != string(k.Kind) {
			return fmt.Errorf("%w: key %s is a %s, where %s %s keeps %s (a %s): another framework's or another version's layout is in this database; give the drill a database of its own",
				ErrForeignLayout, k.Key, typ, fw.Title, fw.Version, k.What, k.Kind)
		}
		if strings.HasSuffix(k.Key, ":wait") && name == layout.PresetBullMQ {
			// Bull (v3, v4) keeps the same lists and sets under the same
			// names; its own keys give it away.
			base := strings.TrimSuffix(k.Key, "wait")
			n, err := env.Redis.Exists(ctx, base+"priority", base+"meta-paused").Result()
			if err != nil {
				return fmt.Errorf("EXISTS %spriority: %w", base, err)
			}
			if n > 0 {
				return fmt.Errorf("%w: %spriority or %smeta-paused exists: a Bull (v3 or v4) queue of this name, whose jobs BullMQ cannot read; give the drill a queue or a database of its own", ErrForeignLayout, base, base)
			}
		}
		if strings.HasSuffix(k.Key, ":meta") && name == layout.PresetBullMQ {
			v, err := env.Redis.HGet(ctx, k.Key, "version").Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("HGET %s version: %w", k.Key, err)
			}
			if v != "" && !strings.HasPrefix(v, "bullmq:") {
				return fmt.Errorf("%w: key %s says version %q, where BullMQ keeps bullmq:<version>: another library's queue (Bull?) uses this name", ErrForeignLayout, k.Key, v)
			}
		}
		if k.Shared && k.Holds == layout.HoldsSidekiqJob {
			ids, err := sharedMembers(ctx, env.Redis, k, frameworkQueue(in, d, env))
			if err != nil {
				return err
			}
			if len(ids) > 0 {
				return fmt.Errorf("%w: %s already holds %d job(s) of queue %s (e.g. %s): a drill starts from an empty queue", ErrForeignLayout, k.Key, len(ids), frameworkQueue(in, d, env), ids[0])
			}
		}
	}
	return nil
}

// JobKeys returns the keys in's (and d's) framework keeps the jobs ids
// in outside its queue's keys (layout.FrameworkJobKeys), expanded.
func JobKeys(in layout.Inject, d layout.DLQ, env Env, ids []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range []struct {
		preset string
		o      layout.FrameworkOptions
	}{{in.Preset, in.FrameworkOptions()}, {d.Preset, d.FrameworkOptions()}} {
		if !layout.IsFramework(p.preset) {
			continue
		}
		q, pre := env.expand(p.o.Queue), env.expand(p.o.Prefix)
		for _, id := range ids {
			for _, k := range layout.FrameworkJobKeys(p.preset, q, pre, id) {
				if !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	return out
}

func frameworkQueue(in layout.Inject, d layout.DLQ, env Env) string {
	if layout.IsFramework(in.Preset) {
		return env.expand(in.FrameworkOptions().Queue)
	}
	return env.expand(d.FrameworkOptions().Queue)
}

// sharedMembers returns the job IDs of queue's members of a Sidekiq set
// every queue shares.
func sharedMembers(ctx context.Context, rdb redis.UniversalClient, k layout.FrameworkKey, queue string) ([]string, error) {
	members, err := rdb.ZRange(ctx, k.Key, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("ZRANGE %s: %w", k.Key, err)
	}
	var ids []string
	for _, m := range members {
		var job struct {
			JID   string `json:"jid"`
			Queue string `json:"queue"`
		}
		if json.Unmarshal([]byte(m), &job) == nil && job.Queue == queue && job.JID != "" {
			ids = append(ids, job.JID)
		}
	}
	return ids, nil
}

// frameworkInjector enqueues through the framework's own client (the
// adapter program's inject mode, a command adapter) and reads what is
// still queued from the framework's keys.
type frameworkInjector struct {
	*commandInjector
	prog *frameworkProgram
	rdb  redis.UniversalClient
	keys []layout.FrameworkKey
}

var (
	_ Injector    = (*frameworkInjector)(nil)
	_ QueueReader = (*frameworkInjector)(nil)
)

func newFrameworkInjector(cfg layout.Inject, env Env, doc docRenderer) (Injector, error) {
	fw, _ := layout.FrameworkOf(cfg.Preset)
	if env.Redis == nil {
		return nil, fmt.Errorf("inject: the %s preset: %w: no Redis client", fw.Name, ErrEnv)
	}
	o := cfg.FrameworkOptions()
	p, err := newFrameworkProgram(fw, o, env)
	if err != nil {
		return nil, fmt.Errorf("inject: %w", err)
	}
	ci := &commandInjector{spec: p.mode("inject"), doc: doc}
	// Started now, not on the first job: a runtime loading its framework
	// (node and bullmq, about 0.4 s) would delay the scenario's first jobs.
	ci.mu.Lock()
	err = ci.start()
	ci.mu.Unlock()
	if err != nil {
		p.close()
		return nil, fmt.Errorf("inject: the %s preset: %w", fw.Name, err)
	}
	return &frameworkInjector{commandInjector: ci, prog: p, rdb: env.Redis, keys: frameworkKeys(cfg.Preset, o, env)}, nil
}

// Queued returns the IDs of the queue's jobs still queued or waiting to
// be retried, read from the framework's keys in one transaction.
func (f *frameworkInjector) Queued(ctx context.Context) ([]string, error) {
	var queued []layout.FrameworkKey
	for _, k := range f.keys {
		if k.Queued {
			queued = append(queued, k)
		}
	}
	cmds := make([]*redis.StringSliceCmd, len(queued))
	_, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range queued {
			if k.Kind == layout.KindList {
				cmds[i] = p.LRange(ctx, k.Key, 0, -1)
			} else {
				cmds[i] = p.ZRange(ctx, k.Key, 0, -1)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read the %s queue: %w", f.prog.fw.Name, err)
	}
	var ids []string
	seen := map[string]bool{}
	var bad *CorruptError
	for i, k := range queued {
		members := cmds[i].Val()
		if k.Kind == layout.KindList && f.prog.fw.Name != layout.PresetRQ {
			slices.Reverse(members) // LPUSH: the oldest is last
		}
		for pos, m := range members {
			id, ok, why := memberID(k.Holds, m, f.prog.queue, k.Shared)
			if why != "" {
				if bad == nil {
					bad = &CorruptError{Queue: k.Key}
				}
				bad.add(k.Key+"["+strconv.Itoa(pos)+"]", why)
				continue
			}
			if ok && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if bad != nil {
		return ids, bad
	}
	return ids, nil
}

// memberID reads a framework key's member: its job ID, whether it is this
// queue's, or why it cannot be read.
func memberID(h layout.Holds, m, queue string, shared bool) (id string, ok bool, why string) {
	switch h {
	case layout.HoldsSidekiqJob:
		var job struct {
			JID   string `json:"jid"`
			Queue string `json:"queue"`
		}
		if err := json.Unmarshal([]byte(m), &job); err != nil || job.JID == "" {
			if shared {
				return "", false, "" // another queue's business
			}
			return "", false, "not a Sidekiq job (JSON with a jid): " + excerpt([]byte(m), 80)
		}
		return job.JID, !shared || job.Queue == queue, ""
	case layout.HoldsCeleryMessage:
		var msg struct {
			Headers struct {
				ID string `json:"id"`
			} `json:"headers"`
			Properties struct {
				CorrelationID string `json:"correlation_id"`
			} `json:"properties"`
		}
		if err := json.Unmarshal([]byte(m), &msg); err != nil {
			return "", false, "not a kombu message (JSON): " + excerpt([]byte(m), 80)
		}
		id := msg.Headers.ID
		if id == "" {
			id = msg.Properties.CorrelationID
		}
		if id == "" {
			return "", false, "a kombu message without a task ID (headers.id): " + excerpt([]byte(m), 80)
		}
		return id, true, ""
	}
	return m, m != "", ""
}

// Close stops the inject command and removes its program.
func (f *frameworkInjector) Close() error {
	err := f.commandInjector.Close()
	return errors.Join(err, f.prog.close())
}

// frameworkReader reads the dead letters with the adapter program's dlq
// mode (a command adapter).
type frameworkReader struct {
	commandReader
	prog *frameworkProgram
}

func newFrameworkReader(d layout.DLQ, fields layout.Fields, env Env) (Reader, error) {
	fw, _ := layout.FrameworkOf(d.Preset)
	p, err := newFrameworkProgram(fw, d.FrameworkOptions(), env)
	if err != nil {
		return nil, fmt.Errorf("dlq: %w", err)
	}
	return &frameworkReader{commandReader: commandReader{spec: p.mode("dlq"), fields: fields}, prog: p}, nil
}

// Close removes the program.
func (f *frameworkReader) Close() error { return f.prog.close() }

// FrameworkProbe is the readiness probe of in's framework preset: its
// adapter program's ready mode, ready once copies worker processes
// consume the queue. Close removes the program.
type FrameworkProbe struct {
	commandProbe
	prog *frameworkProgram
}

// NewFrameworkProbe returns the probe of in's framework preset.
func NewFrameworkProbe(in layout.Inject, copies int, env Env) (*FrameworkProbe, error) {
	fw, ok := layout.FrameworkOf(in.Preset)
	if !ok {
		return nil, fmt.Errorf("ready: %q: %w: not a framework preset", in.Preset, layout.ErrConfig)
	}
	p, err := newFrameworkProgram(fw, in.FrameworkOptions(), env)
	if err != nil {
		return nil, fmt.Errorf("ready: %w", err)
	}
	return &FrameworkProbe{commandProbe: commandProbe{spec: p.mode("ready", EnvPresetCopies+"="+strconv.Itoa(max(copies, 1)))}, prog: p}, nil
}

// Describe says what the probe asks.
func (f *FrameworkProbe) Describe() string {
	return fmt.Sprintf("%s preset: %s worker processes consuming queue %s", f.prog.fw.Name, f.prog.fw.Title, f.prog.queue)
}

// Close removes the program.
func (f *FrameworkProbe) Close() error { return f.prog.close() }

// lookRuntime reports whether runtime can be found (a path, or a name on
// PATH).
func lookRuntime(runtime string) bool {
	_, err := exec.LookPath(runtime)
	return err == nil
}

// RuntimeWarning says why framework preset preset's adapter could not run
// on this machine (its runtime is not installed), for validate's
// warnings; "" when it can, or preset is not a framework's.
func RuntimeWarning(preset, runtime string) string {
	fw, ok := layout.FrameworkOf(preset)
	if !ok {
		return ""
	}
	if runtime == "" {
		runtime = fw.Runtime
	}
	if strings.Contains(runtime, "{") || lookRuntime(runtime) {
		return ""
	}
	return fmt.Sprintf("the %s preset runs its adapter with %s, which is not installed here: a drill would be refused (install: %s)", fw.Name, runtime, fw.Install)
}
