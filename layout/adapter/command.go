package adapter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/layout"
)

var (
	_ Injector = (*commandInjector)(nil)
	_ Reader   = (*commandReader)(nil)
)

// Bounds of the command adapters.
const (
	// CommandReadTimeout bounds a DLQ command's run.
	CommandReadTimeout = 30 * time.Second
	// CommandStopGrace is how long Close waits for an inject command to
	// exit after its stdin is closed, before killing it.
	CommandStopGrace = 5 * time.Second
	// MaxCommandOutput bounds what a DLQ command may print: 64 MiB.
	MaxCommandOutput = 64 << 20
	// pipeGrace is how long a finished command's pipes may stay open
	// (held by a child it left behind) before they are closed.
	pipeGrace = 2 * time.Second
)

// ErrCommand is matched by the errors of a command adapter whose command
// failed: it could not start, exited, answered a job with something else
// than "ok", or exited non-zero.
var ErrCommand = errors.New("command failed")

// commandSpec is a command ready to start: path, arguments, directory and
// environment resolved and expanded.
type commandSpec struct {
	path string
	args []string
	dir  string
	env  []string
	// stderr receives the command's stderr (nil: discarded).
	stderr io.Writer
}

func newCommandSpec(c layout.Command, env Env) (commandSpec, error) {
	base, err := filepath.Abs(env.Dir)
	if err != nil {
		return commandSpec{}, fmt.Errorf("command %s: base folder %q: %w", c.Path, env.Dir, err)
	}
	path := env.expand(c.Path)
	if !filepath.IsAbs(path) && strings.ContainsRune(path, '/') {
		path = filepath.Join(base, path)
	}
	dir := inFolder(base, env.expand(c.Dir))
	names := make([]string, 0, len(c.Env))
	for k := range c.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	environ := append(os.Environ(), env.Environ...)
	for _, k := range names {
		environ = append(environ, k+"="+env.expand(c.Env[k]))
	}
	if !strings.ContainsRune(path, '/') {
		path = lookPath(path, environ)
	}
	return commandSpec{path: path, args: expandAll(c.Args, env), dir: dir, env: environ, stderr: env.Stderr}, nil
}

// inFolder is dir taken from base: base when dir is "", dir when it is
// absolute.
func inFolder(base, dir string) string {
	switch {
	case dir == "":
		return base
	case !filepath.IsAbs(dir):
		return filepath.Join(base, dir)
	}
	return dir
}

// lookPath finds a bare name on the PATH of the command's own environment
// (the last PATH= in environ), which may differ from faultline's; a name
// it does not find is left for exec to look up (and report).
func lookPath(name string, environ []string) string {
	var path string
	for _, kv := range environ {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = p
		}
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		f := filepath.Join(d, name)
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return f
		}
	}
	return name
}

func (s commandSpec) String() string {
	return strings.Join(append([]string{s.path}, s.args...), " ")
}

// command returns the exec.Cmd of s in a process group of its own, killed
// as a group when ctx ends.
func (s commandSpec) command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.path, s.args...)
	cmd.Dir = s.dir
	cmd.Env = s.env
	ownGroup(cmd)
	cmd.WaitDelay = pipeGrace
	return cmd
}

// tail keeps the last bytes written to it, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > excerptLen {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-excerptLen:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// stderrNote is ": stderr: …" when the command wrote to stderr.
func stderrNote(t *tail) string {
	if s := t.String(); s != "" {
		return fmt.Sprintf(" (stderr: %q)", s)
	}
	return ""
}

func (s commandSpec) stderrWriter(t *tail) io.Writer {
	if s.stderr == nil {
		return t
	}
	return io.MultiWriter(s.stderr, t)
}

// commandInjector writes one JSON line per job to a command it starts on
// the first Inject, and reads one answer line per job from its stdout.
type commandInjector struct {
	spec commandSpec
	doc  docRenderer

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	stdin   io.WriteCloser
	lines   chan string   // the answers; closed when stdout ends
	exited  chan struct{} // closed when the command has exited
	waitErr error         // set before exited is closed
	stderr  *tail
	// stale counts answers still owed to jobs whose Inject gave up
	// waiting: they are skipped before the next job's answer.
	stale int
	// broken is set when the protocol cannot go on (a write that did not
	// finish); every later Inject returns it.
	broken error
}

func (c *commandInjector) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := c.spec.command(ctx)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return fmt.Errorf("command %s: %w", c.spec, err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		cancel()
		return fmt.Errorf("command %s: %w", c.spec, err)
	}
	cmd.Stdout = pw // the child's own end: Wait does not wait on a copy
	c.stderr = &tail{}
	cmd.Stderr = c.spec.stderrWriter(c.stderr)
	if err := cmd.Start(); err != nil {
		cancel()
		pr.Close()
		pw.Close()
		return fmt.Errorf("start command %s: %w: %w", c.spec, ErrCommand, err)
	}
	pw.Close()
	c.started, c.cancel, c.stdin = true, cancel, stdin
	c.lines, c.exited = make(chan string, 16), make(chan struct{})
	go func() {
		defer close(c.lines)
		r := bufio.NewReader(pr)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				select {
				case c.lines <- strings.TrimRight(line, "\r\n"):
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
		// A child the command left behind may hold stdout open: the
		// answers stop when the command is gone and its grace is over.
		time.AfterFunc(pipeGrace, func() { pr.Close() })
	}()
	return nil
}

// exitError says the command is gone, with how it ended.
func (c *commandInjector) exitError() error {
	select {
	case <-c.exited:
		return fmt.Errorf("command %s exited: %w: %v%s", c.spec, ErrCommand, c.waitErr, stderrNote(c.stderr))
	case <-time.After(pipeGrace):
		return fmt.Errorf("command %s closed its stdout: %w%s", c.spec, ErrCommand, stderrNote(c.stderr))
	}
}

// Inject writes the job's document as one line and waits for its answer:
// "ok", or anything else, which is the job's error. When ctx ends first,
// the job's fate is unknown (an error wrapping ctx's), and its answer,
// when it comes, is skipped.
func (c *commandInjector) Inject(ctx context.Context, j layout.Job) error {
	b, err := c.doc.render(j)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return fmt.Errorf("inject job %s: %w", j.ID, c.broken)
	}
	if !c.started {
		if err := c.start(); err != nil {
			c.broken = err
			return fmt.Errorf("inject job %s: %w", j.ID, err)
		}
	}
	for c.stale > 0 {
		select {
		case _, ok := <-c.lines:
			if !ok {
				return fmt.Errorf("inject job %s: %w", j.ID, c.exitError())
			}
			c.stale--
		case <-ctx.Done():
			return fmt.Errorf("inject job %s: command %s still owes %d answer(s): %w", j.ID, c.spec, c.stale, ctx.Err())
		}
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := c.stdin.Write(append(b, '\n'))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			return fmt.Errorf("inject job %s: write to command %s: %w: %w%s", j.ID, c.spec, ErrCommand, err, stderrNote(c.stderr))
		}
	case <-ctx.Done():
		// The line may be half written: nothing after it can be trusted.
		c.broken = fmt.Errorf("command %s stopped reading its stdin: %w", c.spec, ErrCommand)
		c.cancel()
		return fmt.Errorf("inject job %s: write to command %s: %w", j.ID, c.spec, ctx.Err())
	}
	select {
	case line, ok := <-c.lines:
		if !ok {
			return fmt.Errorf("inject job %s: %w", j.ID, c.exitError())
		}
		if strings.TrimSpace(line) == "ok" {
			return nil
		}
		return fmt.Errorf("inject job %s: command %s answered %q: %w", j.ID, c.spec, excerpt([]byte(line), excerptLen), ErrCommand)
	case <-ctx.Done():
		c.stale++
		return fmt.Errorf("inject job %s: command %s did not answer: %w", j.ID, c.spec, ctx.Err())
	}
}

// Close closes the command's stdin and waits for it to exit, killing it
// (with its process group) after CommandStopGrace. A command that exits
// non-zero by itself is reported.
func (c *commandInjector) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		return nil
	}
	c.started = false
	c.broken = fmt.Errorf("command %s: %w: closed", c.spec, ErrCommand)
	_ = c.stdin.Close()
	defer c.cancel()
	select {
	case <-c.exited:
		if c.waitErr != nil {
			return fmt.Errorf("command %s: %w: %w%s", c.spec, ErrCommand, c.waitErr, stderrNote(c.stderr))
		}
		return nil
	case <-time.After(CommandStopGrace):
		c.cancel()
		<-c.exited
		return fmt.Errorf("command %s did not exit within %v of its stdin closing: killed", c.spec, CommandStopGrace)
	}
}

// commandReader runs a command that prints the DLQ's entries as JSON lines.
type commandReader struct {
	spec   commandSpec
	fields layout.Fields
}

// limited is a buffer that refuses to grow past its bound.
type limited struct {
	bytes.Buffer
	max  int
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	if l.Len()+len(p) > l.max {
		l.over = true
		return 0, fmt.Errorf("output over %d bytes", l.max)
	}
	return l.Buffer.Write(p)
}

// Read runs the command to completion (at most CommandReadTimeout): every
// non-empty line it prints is an entry, "line N" (N from 1, counting every
// line). A non-zero exit is an error with its stderr's last bytes.
func (c *commandReader) Read(ctx context.Context) ([]layout.Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, CommandReadTimeout)
	defer cancel()
	cmd := c.spec.command(ctx)
	out := &limited{max: MaxCommandOutput}
	errTail := &tail{}
	cmd.Stdout = out
	cmd.Stderr = c.spec.stderrWriter(errTail)
	if err := cmd.Run(); err != nil {
		switch {
		case out.over:
			return nil, fmt.Errorf("read DLQ: command %s: %w: printed over %d bytes", c.spec, ErrCommand, MaxCommandOutput)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("read DLQ: command %s: %w: %w%s", c.spec, ErrCommand, ctx.Err(), stderrNote(errTail))
		}
		return nil, fmt.Errorf("read DLQ: command %s: %w: %w%s", c.spec, ErrCommand, err, stderrNote(errTail))
	}
	var entries []layout.Entry
	for i, line := range bytes.Split(out.Bytes(), []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			entries = append(entries, layout.ParseEntry(fmt.Sprintf("line %d", i+1), line, c.fields).RequireID())
		}
	}
	return entries, nil
}

func (c *commandReader) Close() error { return nil }
