package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// The default Limits.
const (
	// DefaultMaxFileSize bounds a scenario, fragment or rule file: 10 MiB.
	DefaultMaxFileSize = 10 << 20
	// DefaultMaxDepth bounds the nesting of a file's values.
	DefaultMaxDepth = 64
)

// Limits bound what loading a scenario may take and what its run may use,
// so that a hostile or mistaken file is refused with an error naming the
// limit (and the faultline flag that lifts it) instead of exhausting
// memory. A zero field takes its default.
type Limits struct {
	// MaxFileSize bounds each file read (scenario, fragment, rule file),
	// in bytes; checked before the file is read (default
	// DefaultMaxFileSize; faultline --max-file-size).
	MaxFileSize int64
	// MaxDepth bounds the nesting of a file's values; checked by a scan
	// of the text before the YAML parser sees it (default
	// DefaultMaxDepth; faultline --max-depth).
	MaxDepth int
	// Run bounds what the scenario's run may use: workers, samples, jobs
	// in flight (RunLimits; faultline --max-workers, --max-samples,
	// --max-in-flight). The loaded scenario carries them.
	Run RunLimits
	// AllowIncludeOutside lets Load follow an include to any file: by
	// default a scenario includes fragments from its own folder and the
	// folders below it only (faultline --allow-include-outside). LoadFS
	// follows includes anywhere inside its fs.FS, never out of it.
	AllowIncludeOutside bool
}

// WithDefaults returns l with its zero fields set to the defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	l.Run = l.Run.WithDefaults()
	return l
}

// Load is Load within l.
func (l Limits) Load(path string) (*Loaded, error) { return load(osFiles{}, path, l) }

// LoadFS is LoadFS within l.
func (l Limits) LoadFS(fsys fs.FS, path string) (*Loaded, error) {
	return load(fsFiles{fsys}, path, l)
}

// LoadBuiltin is LoadBuiltin within l.
func (l Limits) LoadBuiltin(name string) (*Loaded, error) {
	for _, b := range builtins() {
		if b.Name == name {
			return l.LoadFS(builtinFS, b.Path)
		}
	}
	return nil, unknownBuiltin(name)
}

// errTooLarge is a file over the size limit.
type errTooLarge struct {
	size, max int64
}

func (e *errTooLarge) Error() string {
	return fmt.Sprintf("the file is larger than the limit of %s (it has %s); lift the limit with --max-file-size", byteSize(e.max), byteSize(e.size))
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readLimited reads r, refusing more than max bytes; size, when known
// (≥ 0), is checked first, so that nothing is read from a file too large.
func readLimited(r io.Reader, size, max int64) ([]byte, error) {
	if size > max {
		return nil, &errTooLarge{size: size, max: max}
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &errTooLarge{size: int64(len(data)), max: max}
	}
	return data, nil
}

func readOSFile(name string, max int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return readStat(f, max)
}

func readFSFile(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	return readStat(f, max)
}

// readStat reads an open file, closing it, refusing one over max before it
// reads a byte when its size is known (a regular file).
func readStat(f fs.File, max int64) ([]byte, error) {
	defer f.Close()
	size := int64(-1)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return readLimited(f, size, max)
}

// tooLarge reports whether err is a file over the size limit, and says so.
func tooLarge(err error) (string, bool) {
	var tl *errTooLarge
	if errors.As(err, &tl) {
		return tl.Error(), true
	}
	return "", false
}

// scanNodes bounds the nodes scanText counts before a text is parsed: the
// parser's memory grows with them (a 10 MiB flow list of five million
// numbers took 4 GB), and a document that decodes to at most maxValues
// values has fewer than half as many nodes.
const scanNodes = 4 * maxValues

// scanText measures how deep a YAML text nests its values, and counts its
// nodes, without parsing it, in one pass over the bytes and memory bounded
// by max: block indentation levels, sequence entries and complex keys that
// open a level on the line ("- - x", "- &a - x", "? "), and flow brackets
// that open a node, outside quotes and comments; a block scalar's lines are
// skipped. It counts at least as deep as the parser nests, so a text it
// passes is safe to parse. deep is true when the nesting passes max first,
// big when the nodes (an entry, a key, a comma or a bracket each count
// one) pass maxNodes first; line and col (1-based) say where.
func scanText(data []byte, max, maxNodes int) (line, col int, deep, big bool) {
	nodes := 0
	// more counts one node, and tells whether there are too many.
	more := func() bool { nodes++; return nodes > maxNodes }
	var (
		indents []int // the block levels' indentation
		flow    int   // open flow brackets
		quote   byte  // the quote of a quoted scalar spanning lines
		// block is the indentation of the line that opened a block
		// scalar; its content is every line indented more (or blank).
		block = -1
	)
	space := func(c byte) bool { return c == ' ' || c == '\t' }
	for ln, rest := 1, data; len(rest) > 0; ln++ {
		var text []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			text, rest = rest[:i], rest[i+1:]
		} else {
			text, rest = rest, nil
		}
		text = bytes.TrimSuffix(text, []byte("\r"))
		indent := 0
		for indent < len(text) && text[indent] == ' ' {
			indent++
		}
		blank := indent == len(text) || text[indent] == '#'
		if block >= 0 {
			if blank || indent > block {
				continue
			}
			block = -1
		}
		depth := len(indents)
		// node says the next character starts a node (a value), where a
		// quote, a flow bracket, a block scalar or an entry may begin.
		node := quote == 0
		if quote == 0 && flow == 0 {
			if blank {
				continue
			}
			for len(indents) > 0 && indents[len(indents)-1] >= indent {
				indents = indents[:len(indents)-1]
			}
			indents = append(indents, indent)
			depth = len(indents)
			if depth > max {
				return ln, indent + 1, true, false
			}
		}
		header := false // a block scalar's header: "|" or ">" at a node
		for pos := indent; pos < len(text); pos++ {
			c := text[pos]
			next := byte(' ')
			if pos+1 < len(text) {
				next = text[pos+1]
			}
			switch {
			case quote == '\'':
				if c == '\'' {
					if next == '\'' {
						pos++
					} else {
						quote = 0
					}
				}
				continue
			case quote == '"':
				if c == '\\' {
					pos++
				} else if c == '"' {
					quote = 0
				}
				continue
			case space(c):
				continue
			case c == '#' && (pos == 0 || space(text[pos-1])):
				pos = len(text)
				continue
			}
			switch {
			case node && (c == '&' || c == '!'): // an anchor or a tag before the node
				for pos+1 < len(text) && !space(text[pos+1]) && (flow == 0 || !bytes.ContainsAny(text[pos+1:pos+2], ",[]{}")) {
					pos++
				}
			case node && flow == 0 && (c == '-' || c == '?') && space(next):
				depth++ // a sequence entry or complex key opens a level
				if depth+flow > max {
					return ln, pos + 1, true, false
				}
				if more() {
					return ln, pos + 1, false, true
				}
			case node && (c == '\'' || c == '"'):
				quote, node = c, false
			case c == '[' || c == '{':
				if node || flow > 0 {
					flow++
					if depth+flow > max {
						return ln, pos + 1, true, false
					}
					if more() {
						return ln, pos + 1, false, true
					}
					node = true
				} else {
					node = false // inside a plain scalar
				}
			case c == ']' || c == '}':
				if flow > 0 {
					flow--
				}
				node = false
			case c == ',' && flow > 0, c == ':' && (space(next) || flow > 0):
				node = true
				if more() {
					return ln, pos + 1, false, true
				}
			case node && flow == 0 && (c == '|' || c == '>'):
				header, node = true, false
			default:
				node = false
			}
		}
		if header && quote == 0 && flow == 0 {
			block = indent
		}
	}
	return 0, 0, false, false
}
