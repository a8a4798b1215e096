package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// ---- files ----

// files is where the loader reads: the OS or an fs.FS.
type files interface {
	// read reads a file of at most max bytes; with regularOnly, a path
	// that is not a regular file (a pipe, a device, a directory) is refused
	// before it is opened, so that an include cannot block the loader.
	read(name string, max int64, regularOnly bool) ([]byte, error)
	// resolve returns the path of ref, a path written in file from.
	resolve(from, ref string) (string, error)
	// rebase rewrites ref, written in a fragment that a file includes as
	// inc, relative to the including file.
	rebase(inc, ref string) string
	// identity returns the name under which a file is one file, for
	// cycles and fragments included twice.
	identity(name string) string
	// within says why name, which ref wrote, is not in root's folder or a
	// folder below it (nil when it is): where a scenario's includes are
	// read from unless Limits.AllowIncludeOutside.
	within(root, name, ref string) error
	// program resolves a command's program written in file from (see
	// programs.program).
	program(from, ref string) (string, error)
	// folder resolves a command's working directory written in file from
	// (see programs.folder).
	folder(from, ref string) (string, error)
}

type osFiles struct{}

func (osFiles) read(name string, max int64, regularOnly bool) ([]byte, error) {
	if regularOnly {
		if err := regular(os.Stat(name)); err != nil {
			return nil, err
		}
	}
	return readOSFile(name, max)
}

func (osFiles) resolve(from, ref string) (string, error) {
	if strings.TrimSpace(ref) == "" {
		return "", errors.New("expected a file name")
	}
	r := filepath.FromSlash(ref)
	if filepath.IsAbs(r) {
		return filepath.Clean(r), nil
	}
	return filepath.Join(filepath.Dir(from), r), nil
}

func (osFiles) rebase(inc, ref string) string {
	r := filepath.FromSlash(ref)
	if filepath.IsAbs(r) {
		return ref
	}
	return filepath.ToSlash(filepath.Join(filepath.Dir(filepath.FromSlash(inc)), r))
}

func (osFiles) identity(name string) string {
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return filepath.Clean(name)
}

// within checks name's path, then the file it is once links are
// followed: a link in the scenario's folder leads no further than a path.
func (osFiles) within(root, name, ref string) error {
	dir, err := filepath.Abs(filepath.Dir(root))
	if err != nil {
		return fmt.Errorf("%q: %w", ref, err)
	}
	target, err := filepath.Abs(name)
	if err != nil {
		return fmt.Errorf("%q: %w", ref, err)
	}
	if !under(dir, target) {
		return fmt.Errorf("%q is outside %s", ref, confined)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil // no folder to read from: reading says why
	}
	realTarget, err := filepath.EvalSymlinks(target)
	if err != nil {
		return nil // nothing there: reading says so
	}
	if !under(realDir, realTarget) {
		return fmt.Errorf("%q is a link to a file outside %s", ref, confined)
	}
	return nil
}

// confined says where a scenario's includes are read from, and how to
// allow more.
const confined = "the scenario's folder: a scenario includes files from its own folder and the folders below it (--allow-include-outside allows any)"

// under reports whether path is dir or below it (both absolute, clean).
func under(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func (osFiles) program(from, ref string) (string, error) {
	if isBareName(ref) {
		return ref, lookPath(ref)
	}
	r := filepath.FromSlash(ref)
	if !filepath.IsAbs(r) {
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(from), r))
		if err != nil {
			return ref, fmt.Errorf("%q: %w", ref, err)
		}
		r = abs
	}
	r = filepath.Clean(r)
	if strings.Contains(ref, "{") {
		return r, nil
	}
	st, err := os.Stat(r)
	return r, runnable(ref, st, err, true)
}

func (osFiles) folder(from, ref string) (string, error) {
	r := filepath.FromSlash(ref)
	if !filepath.IsAbs(r) {
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(from), r))
		if err != nil {
			return ref, fmt.Errorf("%q: %w", ref, err)
		}
		r = abs
	}
	r = filepath.Clean(r)
	if strings.Contains(ref, "{") {
		return r, nil
	}
	st, err := os.Stat(r)
	return r, isFolder(ref, st, err)
}

type fsFiles struct{ fsys fs.FS }

func (f fsFiles) read(name string, max int64, regularOnly bool) ([]byte, error) {
	n := path.Clean(name)
	if !fs.ValidPath(n) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if regularOnly {
		if err := regular(fs.Stat(f.fsys, n)); err != nil {
			return nil, err
		}
	}
	return readFSFile(f.fsys, n, max)
}

func (fsFiles) resolve(from, ref string) (string, error) {
	switch {
	case strings.TrimSpace(ref) == "":
		return "", errors.New("expected a file name")
	case path.IsAbs(ref):
		return "", fmt.Errorf("%q is an absolute path; write it relative to this file", ref)
	}
	p := path.Join(path.Dir(path.Clean(from)), ref)
	if !fs.ValidPath(p) {
		return "", fmt.Errorf("%q leads outside the scenarios' directory", ref)
	}
	return p, nil
}

func (fsFiles) rebase(inc, ref string) string {
	if path.IsAbs(ref) {
		return ref
	}
	return path.Join(path.Dir(inc), ref)
}

func (fsFiles) identity(name string) string { return path.Clean(name) }

// within: resolve keeps every file inside fsys, which bounds the includes.
func (fsFiles) within(root, name, ref string) error { return nil }

// program resolves a program on the OS (a bare name, an absolute path) or
// in fsys (a relative path, which stays relative to fsys).
func (f fsFiles) program(from, ref string) (string, error) {
	switch {
	case isBareName(ref):
		return ref, lookPath(ref)
	case path.IsAbs(ref):
		if strings.Contains(ref, "{") {
			return ref, nil
		}
		st, err := os.Stat(ref)
		return ref, runnable(ref, st, err, true)
	}
	p := path.Join(path.Dir(path.Clean(from)), ref)
	if !fs.ValidPath(p) {
		return ref, fmt.Errorf("%q leads outside the scenarios' directory", ref)
	}
	if strings.Contains(ref, "{") {
		return p, nil
	}
	st, err := fs.Stat(f.fsys, p)
	return p, runnable(ref, st, err, false)
}

// folder resolves a folder in fsys ("" stays "": fsys has no folder on
// the OS to give) or, when absolute, on the OS.
func (f fsFiles) folder(from, ref string) (string, error) {
	var st fs.FileInfo
	var err error
	p := ref
	switch {
	case ref == "":
		return "", nil
	case path.IsAbs(ref):
		if !strings.Contains(ref, "{") {
			st, err = os.Stat(ref)
		}
	default:
		p = path.Join(path.Dir(path.Clean(from)), ref)
		if !fs.ValidPath(p) {
			return ref, fmt.Errorf("%q leads outside the scenarios' directory", ref)
		}
		if !strings.Contains(ref, "{") {
			st, err = fs.Stat(f.fsys, p)
		}
	}
	if st == nil && err == nil {
		return p, nil // a placeholder: known at the drill
	}
	return p, isFolder(ref, st, err)
}

// isBareName reports whether a command's program is a name to look up on
// PATH (no slash) rather than a path.
func isBareName(ref string) bool {
	return !strings.ContainsRune(ref, '/') && !strings.ContainsRune(ref, filepath.Separator)
}

// lookPath checks that a bare program name is on PATH (a name holding a
// placeholder is known only at the drill).
func lookPath(name string) error {
	if strings.Contains(name, "{") {
		return nil
	}
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("%q is not on PATH; expected a program on PATH or a path to one (a relative path with a slash is relative to this file's folder)", name)
	}
	return nil
}

// runnable says why the file a program's path ref names (st, or err from
// its Stat) cannot be run; checkMode checks its executable bits.
func runnable(ref string, st fs.FileInfo, err error, checkMode bool) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q: no such file; expected a program (a relative path is relative to this file's folder)", ref)
	case err != nil:
		return fmt.Errorf("%q: %s", ref, readFailure(err))
	case st.IsDir():
		return fmt.Errorf("%q is a folder; expected a program", ref)
	case checkMode && st.Mode()&0o111 == 0:
		return fmt.Errorf("%q is not executable; make it so (chmod +x) or run it with its interpreter (path: python3, args: [%s])", ref, ref)
	}
	return nil
}

// isFolder says why what a command's dir ref names (st, or err from its
// Stat) is not a folder.
func isFolder(ref string, st fs.FileInfo, err error) error {
	shown := ref
	if shown == "" {
		shown = "." // the scenario's folder
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%q: no such folder; expected the command's working directory (relative to this file's folder)", shown)
	case err != nil:
		return fmt.Errorf("%q: %s", shown, readFailure(err))
	case !st.IsDir():
		return fmt.Errorf("%q is not a folder; expected the command's working directory", shown)
	}
	return nil
}

// loaderPrograms resolves the programs of the scenario root in l's files.
type loaderPrograms struct {
	files files
	root  string
}

func (p loaderPrograms) program(ref string) (string, error) { return p.files.program(p.root, ref) }
func (p loaderPrograms) folder(ref string) (string, error)  { return p.files.folder(p.root, ref) }

// readFailure says why a file could not be read, without the path the
// caller names anyway.
// errNotRegular: an included fragment or a rule file that is not a regular
// file; reading a named pipe or a terminal would block the loader.
var errNotRegular = errors.New("not a regular file (a pipe, a device or a directory): fragments and rule files are read only from regular files")

// regular turns a Stat's answer into errNotRegular for anything but a
// regular file.
func regular(st fs.FileInfo, err error) error {
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errNotRegular
	}
	return nil
}

func readFailure(err error) string {
	if msg, ok := tooLarge(err); ok {
		return msg
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
