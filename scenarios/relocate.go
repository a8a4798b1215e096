package scenarios

import (
	"path/filepath"
	"slices"
)

// Relocate returns a copy of d, a document of l's scenario (its effective
// document, or one made from it, such as a shrunk one), to be written in
// the folder dir: the paths it holds relative to l's file — its includes,
// its rules file, a black box's programs and working directories — are
// rewritten so that they resolve from dir to the same files. A path stays
// relative when l's path and dir are both relative (one tree, as given),
// and is made absolute otherwise; a command that had no working directory
// (the scenario's folder) gets that folder's. d is not changed. A scenario
// loaded from an fs.FS has no folder on the operating system: its
// document is returned as it is.
func (l *Loaded) Relocate(d *Document, dir string) *Document {
	if d == nil {
		return nil
	}
	out := *d
	if _, ok := l.files.(osFiles); !ok {
		return &out
	}
	from := filepath.Dir(l.Path)
	move := func(ref string) string { return relocatePath(ref, from, dir) }
	if len(d.Include) > 0 {
		out.Include = make([]string, len(d.Include))
		for i, inc := range d.Include {
			out.Include[i] = move(inc)
		}
	}
	if rf := d.System.RulesFile; rf != "" {
		out.System.RulesFile = move(rf)
	}
	if e := d.System.External; e != nil {
		ext := *e
		for _, c := range []**Command{&ext.Command, &ext.Inject.Command, &ext.DLQ.Command} {
			if *c != nil {
				cmd := **c
				cmd.Args = slices.Clone(cmd.Args)
				*c = &cmd
			}
		}
		rebaseCommands(&ext, move)
		out.System.External = &ext
	}
	return &out
}

// relocatePath rewrites ref, a path relative to the folder from, to
// resolve from the folder to: relative when both folders are, absolute
// otherwise (or when no relative path leads there). An absolute ref stays
// as it is.
func relocatePath(ref, from, to string) string {
	r := filepath.FromSlash(ref)
	if filepath.IsAbs(r) {
		return ref
	}
	target := filepath.Join(from, r)
	if !filepath.IsAbs(from) && !filepath.IsAbs(to) {
		if rel, err := filepath.Rel(to, target); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	if abs, err := filepath.Abs(target); err == nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(target)
}
