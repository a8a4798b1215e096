package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/faultline/faultline/reference/dlq"
	rjob "github.com/faultline/faultline/reference/job"
)

func newDLQEditCommand(g *dlqGlobal) *cobra.Command {
	var (
		sets        []string
		payloadFile string
		dryRun      bool
		reveal      bool
		cf          confirmation
	)
	c := &cobra.Command{
		Use:   "edit ID (--set PATH=VALUE... | --payload-file FILE)",
		Short: "Change a failed entry's payload before requeueing it; the edit goes into its history",
		Long: `edit replaces the payload of a failed or quarantined entry's job, in one guarded step,
and records the edit in the entry's status history: who (--by), when, and the sizes
and SHA-256 digests of the payload before and after. The new payload must be JSON.

  --set PATH=VALUE   set one field (repeatable): PATH is dot-separated object keys
                     and array indexes (customer.address.zip, items.0.sku or
                     items[0].sku); VALUE is parsed as JSON when it is valid JSON
                     (42, true, null, "x", {"a":1}), else taken as a string.
                     Missing objects on the path are created.
  --payload-file F   the whole new payload from file F (- for stdin).
  neither            opens the payload in $VISUAL or $EDITOR (else vi) on a
                     temporary file, when stdin is a terminal.

--set rewrites the payload as compact JSON with its keys sorted. --dry-run prints the
new payload (masked unless --reveal) and changes nothing. With --set or --payload-file
it asks before writing on a terminal, and a script passes --yes; in $EDITOR, saving
is the confirmation. A requeued entry's job is
back in a queue and a deleted one must be restored first: both are refused.`,
		Example: `  faultline dlq edit ord-42 --set amount=1299 --set customer.email=ops@example.com --by alice --yes
  faultline dlq edit ord-42 --payload-file fixed.json --dry-run
  faultline dlq edit ord-42`,
		Args: oneID,
		RunE: func(c *cobra.Command, args []string) error {
			if len(sets) > 0 && payloadFile != "" {
				return usage(c, errors.New("give --set or --payload-file, not both"))
			}
			id := args[0]
			var fromFile []byte
			if payloadFile != "" {
				b, err := readPayloadFile(c, payloadFile)
				if err != nil {
					return err
				}
				fromFile = b
			}
			useEditor := len(sets) == 0 && payloadFile == ""
			if useEditor {
				in, ok := c.InOrStdin().(*os.File)
				if !ok || !isTerminal(in) {
					return usage(c, errors.New("edit needs --set PATH=VALUE or --payload-file FILE: stdin is not a terminal, so no editor was opened and nothing changed"))
				}
			}
			d, err := g.open(c, 0)
			if err != nil {
				return err
			}
			defer d.close()
			ctx, w := c.Context(), c.OutOrStdout()
			e, err := d.store.Get(ctx, id)
			if err != nil {
				return d.moveError(c, id, err)
			}
			if err := dlq.Editable(&e); err != nil {
				return usage(c, fmt.Errorf("edit %s: %w", masked(id), err))
			}
			var next []byte
			switch {
			case fromFile != nil:
				next = fromFile
			case len(sets) > 0:
				if next, err = applySets(e.Job.Payload, sets); err != nil {
					return usage(c, err)
				}
			default:
				if next, err = editInEditor(c, id, e.Job.Payload); err != nil {
					return err
				}
			}
			if sameJSON(next, e.Job.Payload) {
				fmt.Fprintf(w, "%s: the payload is unchanged (as JSON); nothing written\n", masked(id))
				return nil
			}
			if dryRun {
				pretty, text := payloadOf(next, reveal)
				if pretty == nil {
					pretty = []byte(text)
				}
				fmt.Fprintf(w, "dry run: the payload of %s would become:\n%s\nnothing changed\n", masked(id), indent(string(pretty)))
				return nil
			}
			if !useEditor {
				ok, err := cf.ask(c, fmt.Sprintf("write the new payload of %s (%d bytes, was %d) in namespace %q at %s",
					masked(id), len(next), len(e.Job.Payload), d.namespace, d.target.printable()))
				if err != nil || !ok {
					return err
				}
			}
			// Guarded by the revision read before the edit: an entry that
			// changed meanwhile (in $EDITOR, say) is refused, not
			// overwritten.
			var ed dlq.RevisionEditor = d.store
			got, err := ed.EditPayloadAt(ctx, id, dlq.Revision(&e), next, g.actor(), time.Now())
			switch {
			case errors.Is(err, rjob.ErrInvalid):
				return usage(c, fmt.Errorf("edit %s: %w", masked(id), err))
			case errors.Is(err, dlq.ErrChanged):
				return usage(c, fmt.Errorf("edit %s: the entry changed since it was read (requeued, failed again or edited by someone else); nothing written: show it and edit again", masked(id)))
			case err != nil:
				return d.moveError(c, id, err)
			}
			last := got.Changes[len(got.Changes)-1]
			_ = d.record(c, dlq.AuditRecord{By: g.actor(), Action: "edit", IDs: []string{id}, Stated: 1, Moved: 1, Note: last.Reason})
			pretty, _ := payloadOf(got.Job.Payload, reveal)
			fmt.Fprintf(w, "%s: %s, by %s\n%s\n", masked(id), last.Reason, masked(last.By), indent(string(pretty)))
			return nil
		},
	}
	c.Flags().StringArrayVar(&sets, "set", nil, "set the field at PATH to VALUE (JSON if valid, else a string); repeatable")
	c.Flags().StringVar(&payloadFile, "payload-file", "", "the new payload, as JSON, from this file (- for stdin)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print the new payload; change nothing")
	c.Flags().BoolVar(&reveal, "reveal", false, "print the payload unmasked (secrets included)")
	cf.addYes(c, true)
	return c
}

// sameJSON reports whether a and b are the same bytes, or the same JSON
// value written differently (spacing, key order).
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	decode := func(p []byte) (any, bool) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(p))
		dec.UseNumber()
		if dec.Decode(&v) != nil || dec.More() {
			return nil, false
		}
		return v, true
	}
	va, oka := decode(a)
	vb, okb := decode(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// readPayloadFile reads a --payload-file and checks that it is one JSON
// value.
func readPayloadFile(c *cobra.Command, name string) ([]byte, error) {
	var (
		b   []byte
		err error
	)
	if name == "-" {
		var buf bytes.Buffer
		_, err = buf.ReadFrom(c.InOrStdin())
		b = buf.Bytes()
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usage(c, fmt.Errorf("--payload-file: %w", err))
	}
	b = bytes.TrimSpace(b)
	if err := checkJSON(b); err != nil {
		return nil, usage(c, fmt.Errorf("--payload-file %s: %w; nothing changed", name, err))
	}
	return b, nil
}

// checkJSON says why b is not one JSON value.
func checkJSON(b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return errors.New("empty, not JSON")
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("not valid JSON: more than one value")
	}
	return nil
}

// applySets returns payload with every PATH=VALUE of sets applied, as
// compact JSON. An empty payload starts as {}.
func applySets(payload []byte, sets []string) ([]byte, error) {
	var doc any = map[string]any{}
	if len(bytes.TrimSpace(payload)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil || dec.More() {
			return nil, errors.New("--set: the entry's payload is not JSON, so it has no fields to set; give the whole payload with --payload-file")
		}
	}
	for _, s := range sets {
		path, value, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(path) == "" {
			return nil, fmt.Errorf("--set %q: expected PATH=VALUE (e.g. customer.email=ops@example.com)", masked(s))
		}
		keys, err := splitPath(path)
		if err != nil {
			return nil, fmt.Errorf("--set %q: %w", masked(s), err)
		}
		var v any = value
		if json.Valid([]byte(value)) {
			dec := json.NewDecoder(strings.NewReader(value))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("--set %q: %w", masked(s), err)
			}
		}
		if doc, err = setPath(doc, keys, v, ""); err != nil {
			return nil, fmt.Errorf("--set %q: %w", masked(s), err)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("--set: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// splitPath reads a.b.0.c or a.b[0].c into its steps.
func splitPath(p string) ([]string, error) {
	p = strings.ReplaceAll(strings.ReplaceAll(p, "[", "."), "]", "")
	keys := strings.Split(p, ".")
	for _, k := range keys {
		if k == "" {
			return nil, errors.New("an empty step in the path (write a.b.0.c or a.b[0].c)")
		}
	}
	return keys, nil
}

// setPath sets the value at keys inside doc and returns doc; at names the
// path so far, for errors.
func setPath(doc any, keys []string, v any, at string) (any, error) {
	if len(keys) == 0 {
		return v, nil
	}
	k, here := keys[0], strings.TrimPrefix(at+"."+keys[0], ".")
	switch x := doc.(type) {
	case map[string]any:
		child, err := setPath(x[k], keys[1:], v, here)
		if err != nil {
			return nil, err
		}
		x[k] = child
		return x, nil
	case []any:
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(x) {
			return nil, fmt.Errorf("%s: %q is not an index of an array of %d", here, k, len(x))
		}
		if x[i], err = setPath(x[i], keys[1:], v, here); err != nil {
			return nil, err
		}
		return x, nil
	case nil:
		return setPath(map[string]any{}, keys, v, at)
	}
	name := at
	if name == "" {
		name = "the payload"
	}
	return nil, fmt.Errorf("%s is a %s, not an object or array", name, jsonKind(doc))
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}

// editInEditor opens payload (indented when it is JSON) in the operator's
// editor on a private temporary file and returns what was saved, checked to
// be JSON, compacted (it was indented only for editing).
func editInEditor(c *cobra.Command, id string, payload []byte) ([]byte, error) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	tmp, err := os.CreateTemp("", "faultline-edit-*.json")
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", masked(id), err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	content := payload
	var pretty bytes.Buffer
	if json.Indent(&pretty, payload, "", "  ") == nil {
		content = append(pretty.Bytes(), '\n')
	}
	if _, err := tmp.Write(content); err != nil {
		_ = tmp.Close()
		return nil, fmt.Errorf("edit %s: %w", masked(id), err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("edit %s: %w", masked(id), err)
	}
	// The editor command may carry arguments ("code --wait"): the shell
	// splits it, the file is passed as "$1".
	cmd := exec.CommandContext(c.Context(), "/bin/sh", "-c", editor+` "$1"`, "faultline-edit", tmp.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("edit %s: the editor (%s) failed, nothing changed: %w", masked(id), editor, err)
	}
	b, err := os.ReadFile(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("edit %s: %w", masked(id), err)
	}
	if bytes.Equal(b, content) {
		return payload, nil
	}
	b = bytes.TrimSpace(b)
	if err := checkJSON(b); err != nil {
		return nil, usage(c, fmt.Errorf("edit %s: the edited payload is %w; nothing changed", masked(id), err))
	}
	// The payload was indented for editing only: it is stored compact.
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, usage(c, fmt.Errorf("edit %s: the edited payload is not valid JSON: %w; nothing changed", masked(id), err))
	}
	return compact.Bytes(), nil
}
