package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"github.com/faultline/faultline/internal/didyoumean"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
)

// builtinDir is the built-in library's folder inside BuiltinFS.
const builtinDir = "builtin"

// builtinFS holds the built-in library, one scenario a file, each named
// after its metadata.name.
//
//go:embed builtin/*.yaml
var builtinFS embed.FS

// Builtin is one scenario of the built-in library, as `faultline list`
// shows it.
type Builtin struct {
	// Name is the scenario's metadata.name, which is also its file's name.
	Name string
	// Description says, in a sentence, what the scenario proves.
	Description string
	// Tags are the scenario's metadata.tags.
	Tags []string
	// Path is the scenario's file inside BuiltinFS: "builtin/<name>.yaml".
	Path string
}

// BuiltinFS returns the built-in library's files: builtin/<name>.yaml, one
// per scenario. LoadFS reads them; `faultline run --dry-run` prints them.
func BuiltinFS() fs.FS { return builtinFS }

// Builtins returns the built-in library sorted by name, with each
// scenario's name, description and tags read from its file's metadata. The
// slice is the caller's.
//
// The files are embedded in the binary, so their metadata cannot change
// after the build: Builtins panics if a file's metadata is unreadable or
// its name does not match the file's, which the package's tests rule out.
func Builtins() []Builtin {
	bs := builtins()
	out := make([]Builtin, len(bs))
	for i, b := range bs {
		b.Tags = slices.Clone(b.Tags)
		out[i] = b
	}
	return out
}

// builtins reads the library's metadata once.
var builtins = sync.OnceValue(func() []Builtin {
	bs, err := readBuiltins(builtinFS)
	if err != nil {
		panic(fmt.Sprintf("scenarios: the embedded built-in library is broken: %v", err))
	}
	return bs
})

// readBuiltins reads the metadata of every builtin/*.yaml file of fsys,
// sorted by name. Only the metadata is decoded here; LoadBuiltin checks
// the whole file.
func readBuiltins(fsys fs.FS) ([]Builtin, error) {
	paths, err := fs.Glob(fsys, builtinDir+"/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list the built-ins: %w", err)
	}
	var errs []error
	out := make([]Builtin, 0, len(paths))
	for _, p := range paths {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", p, err))
			continue
		}
		var head struct {
			Metadata Metadata `yaml:"metadata"`
		}
		if err := yaml.Unmarshal(data, &head); err != nil {
			errs = append(errs, fmt.Errorf("read the metadata of %s: %w", p, err))
			continue
		}
		md := head.Metadata
		switch want := strings.TrimSuffix(path.Base(p), ".yaml"); {
		case md.Name != want:
			errs = append(errs, fmt.Errorf("%s: metadata.name is %q; a built-in's name must be its file's, %q", p, md.Name, want))
		case strings.TrimSpace(md.Description) == "":
			errs = append(errs, fmt.Errorf("%s: metadata.description is empty; say what the scenario proves", p))
		}
		out = append(out, Builtin{Name: md.Name, Description: strings.TrimSpace(md.Description), Tags: md.Tags, Path: p})
	}
	slices.SortFunc(out, func(a, b Builtin) int { return strings.Compare(a.Name, b.Name) })
	return out, errors.Join(errs...)
}

// LoadBuiltin loads the built-in scenario named name (LoadFS on
// BuiltinFS). A name the library does not hold is an *UnknownBuiltinError
// listing the names and suggesting the closest.
func LoadBuiltin(name string) (*Loaded, error) {
	for _, b := range builtins() {
		if b.Name == name {
			return LoadFS(builtinFS, b.Path)
		}
	}
	return nil, unknownBuiltin(name)
}

// builtinNames returns the library's names, sorted.
func builtinNames() []string {
	bs := builtins()
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
	}
	return names
}

// ErrUnknownBuiltin is matched (errors.Is) by the error LoadBuiltin returns
// for a name the built-in library does not hold.
var ErrUnknownBuiltin = errors.New("unknown built-in scenario")

// UnknownBuiltinError is a name the built-in library does not hold.
type UnknownBuiltinError struct {
	// Name is the name asked for.
	Name string
	// Suggestion is the closest built-in's name, or "" when none is close.
	Suggestion string
	// Known lists the built-ins' names, sorted.
	Known []string
}

// Error returns e.g. `unknown built-in scenario "payment-challange"; did
// you mean "payment-challenge"? (built-ins: alert-sink-outage, ...)`.
func (e *UnknownBuiltinError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown built-in scenario %q", e.Name)
	if e.Suggestion != "" {
		fmt.Fprintf(&b, "; did you mean %q?", e.Suggestion)
	}
	fmt.Fprintf(&b, " (built-ins: %s)", strings.Join(e.Known, ", "))
	return b.String()
}

// Is matches ErrUnknownBuiltin.
func (e *UnknownBuiltinError) Is(target error) bool { return target == ErrUnknownBuiltin }

// unknownBuiltin returns the error for a name the library does not hold.
func unknownBuiltin(name string) *UnknownBuiltinError {
	known := builtinNames()
	return &UnknownBuiltinError{Name: name, Suggestion: didyoumean.Closest(strings.TrimSuffix(strings.TrimSpace(name), ".yaml"), known), Known: known}
}
