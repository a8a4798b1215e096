package scenarios

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/faultline/faultline/faults"
)

// SchemaID is the $id of the format's JSON Schema: where the checked-in
// copy (schema/scenario.schema.json) lives in the repository.
const SchemaID = "https://github.com/faultline/faultline/scenarios/schema/scenario.schema.json"

// The Go types of the format's scalars that are not Go scalars.
var (
	docDurationType = reflect.TypeFor[Duration]()
	docRateType     = reflect.TypeFor[Rate]()
	documentType    = reflect.TypeFor[Document]()
)

// formatField is one key of the format: a field of a document type, with
// its name in files (the yaml tag).
type formatField struct {
	key   string
	index int
	typ   reflect.Type
}

var formatFieldCache sync.Map // reflect.Type → []formatField

// formatFields lists the keys of a document struct type, in field order:
// the one description of the format that the decoder, Marshal, the JSON
// Schema and the reference page share.
func formatFields(t reflect.Type) []formatField {
	if v, ok := formatFieldCache.Load(t); ok {
		return v.([]formatField)
	}
	var out []formatField
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		key, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if key == "-" {
			continue
		}
		if key == "" {
			key = lowerFirst(sf.Name)
		}
		out = append(out, formatField{key: key, index: i, typ: sf.Type})
	}
	formatFieldCache.Store(t, out)
	return out
}

// formatKeys lists the keys valid in a mapping of type t, for "did you
// mean" and "expected one of".
func formatKeys(t reflect.Type) []string {
	fs := formatFields(t)
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	return keys
}

// formatStructs lists every struct type of the format reachable from
// Document, Document first, in the order a reader meets them.
func formatStructs() []reflect.Type {
	var out []reflect.Type
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || slices.Contains(out, t) {
			return
		}
		out = append(out, t)
		for _, f := range formatFields(t) {
			visit(f.typ)
		}
	}
	visit(documentType)
	return out
}

// Schema returns the JSON Schema (draft 2020-12) of the scenario format,
// generated from the Document types and the fault catalogue, indented,
// ending in a newline. The checked-in copy is schema/scenario.schema.json;
// `go generate ./scenarios` rewrites it.
func Schema() []byte {
	defs := jsonObject{
		{"duration", jsonObject{
			{"description", "A duration: a whole number of milliseconds or more written with units, e.g. 30s, 2m, 1h30m or 250ms; 0 alone is allowed."},
			{"anyOf", []any{
				jsonObject{{"type", "string"}, {"pattern", durationPattern}},
				jsonObject{{"const", 0}},
			}},
		}},
		{"rate", jsonObject{
			{"description", "A rate of jobs: 100/s, 6000/m (or /min) or 2/h; a plain number is per second."},
			{"anyOf", []any{
				jsonObject{{"type", "string"}, {"pattern", ratePattern}},
				jsonObject{{"type", "number"}, {"minimum", 0}},
			}},
		}},
	}
	structs := formatStructs()
	for _, t := range structs[1:] {
		defs = append(defs, jsonMember{t.Name(), structSchema(t)})
	}
	root := jsonObject{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", SchemaID},
		{"title", "faultline scenario (" + APIVersion + ")"},
	}
	root = append(root, structSchema(documentType)...)
	root = append(root,
		jsonMember{"if", jsonObject{{"properties", jsonObject{{"kind", jsonObject{{"const", KindScenario}}}}}}},
		jsonMember{"then", jsonObject{{"required", []string{"metadata", "duration"}}}},
		jsonMember{"$defs", defs},
	)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		panic("scenarios: the JSON Schema does not encode: " + err.Error()) // only plain values: cannot happen
	}
	return b.Bytes()
}

// structSchema is the schema of one document type: an object of its keys,
// no others.
func structSchema(t reflect.Type) jsonObject {
	props := jsonObject{}
	var required []string
	for _, f := range formatFields(t) {
		kd := keyDocFor(t, f.key)
		props = append(props, jsonMember{f.key, slices.Insert(valueSchema(f.typ, kd), 0, jsonMember{"description", kd.doc})})
		if kd.required && t != documentType {
			required = append(required, f.key)
		}
		if kd.required && t == documentType && (f.key == "apiVersion" || f.key == "kind") {
			required = append(required, f.key)
		}
	}
	out := jsonObject{{"type", "object"}, {"description", typeDocs[t.Name()]}, {"properties", props}}
	if len(required) > 0 {
		out = append(out, jsonMember{"required", required})
	}
	out = append(out, jsonMember{"additionalProperties", false})
	if t == reflect.TypeFor[Fault]() {
		out = append(out, jsonMember{"allOf", paramSchemas()})
	}
	if t == reflect.TypeFor[AbortIf]() {
		// At least one bound, and a window only with its rate.
		out = append(out, jsonMember{"minProperties", 1}, jsonMember{"dependentRequired", jsonObject{{"errorWindow", []string{"errorRate"}}}})
	}
	return out
}

// valueSchema is the schema of a value of type t, constrained by kd.
func valueSchema(t reflect.Type, kd keyDoc) jsonObject {
	switch {
	case t == docDurationType && kd.pattern != "":
		return jsonObject{{"$ref", "#/$defs/duration"}, {"pattern", kd.pattern}}
	case t == docDurationType:
		return jsonObject{{"$ref", "#/$defs/duration"}}
	case t == docRateType:
		return jsonObject{{"$ref", "#/$defs/rate"}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return valueSchema(t.Elem(), kd)
	case reflect.Struct:
		return jsonObject{{"$ref", "#/$defs/" + t.Name()}}
	case reflect.Slice:
		return jsonObject{{"type", "array"}, {"items", valueSchema(t.Elem(), kd)}}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return jsonObject{{"type", "object"}}
		}
		return jsonObject{{"type", "object"}, {"additionalProperties", valueSchema(t.Elem(), keyDoc{})}}
	case reflect.String:
		s := jsonObject{{"type", "string"}}
		if len(kd.enum) > 0 {
			s = append(s, jsonMember{"enum", kd.enum})
		}
		if kd.pattern != "" {
			s = append(s, jsonMember{"pattern", kd.pattern})
		}
		if kd.format != "" {
			s = append(s, jsonMember{"format", kd.format})
		}
		return s
	case reflect.Bool:
		return jsonObject{{"type", "boolean"}}
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return numberSchema("integer", kd)
	case reflect.Float64:
		return numberSchema("number", kd)
	}
	panic("scenarios: no schema for a " + t.String()) // a new kind of field: teach the schema
}

func numberSchema(typ string, kd keyDoc) jsonObject {
	s := jsonObject{{"type", typ}}
	if kd.zeroOr && kd.min != nil {
		return append(s, jsonMember{"anyOf", []any{jsonObject{{"const", 0}}, jsonObject{{"minimum", *kd.min}}}})
	}
	if kd.min != nil && kd.exclusiveMin {
		s = append(s, jsonMember{"exclusiveMinimum", *kd.min})
	} else if kd.min != nil {
		s = append(s, jsonMember{"minimum", *kd.min})
	}
	if kd.max != nil {
		s = append(s, jsonMember{"maximum", *kd.max})
	}
	return s
}

// paramSchemas constrain a fault's params by its model: one if/then per
// catalogue model.
func paramSchemas() []any {
	var out []any
	for _, e := range faults.Catalogue() {
		props := jsonObject{}
		for _, p := range e.Params {
			s := paramSchema(p)
			doc := p.Doc
			if p.Default != "" {
				doc += " Default: " + p.Default + "."
			}
			props = append(props, jsonMember{p.Name, slices.Insert(s, 0, jsonMember{"description", doc})})
		}
		var targets []string
		for _, k := range e.Targets {
			if Simulates(e.Class, k) {
				targets = append(targets, targetPatterns[k])
			}
		}
		out = append(out, jsonObject{
			{"if", jsonObject{{"properties", jsonObject{{"model", jsonObject{{"const", e.Name}}}}}, {"required", []string{"model"}}}},
			{"then", jsonObject{{"properties", jsonObject{
				{"target", jsonObject{
					{"description", "The targets " + e.Name + " may hit in the simulator."},
					{"pattern", "^(" + strings.Join(targets, "|") + ")$"},
				}},
				{"params", jsonObject{
					{"description", "The parameters of " + e.Name + "."},
					{"type", "object"},
					{"properties", props},
					{"additionalProperties", false},
				}},
			}}}},
		})
	}
	return out
}

// paramSchema is the schema of one catalogue parameter.
func paramSchema(p faults.Param) jsonObject {
	var s jsonObject
	switch p.Type {
	case "duration":
		s = jsonObject{{"$ref", "#/$defs/duration"}}
	case "float":
		s = jsonObject{{"type", "number"}}
	case "int":
		s = jsonObject{{"type", "integer"}}
	case "bool":
		s = jsonObject{{"type", "boolean"}}
	case "[]string":
		s = jsonObject{{"type", "array"}, {"items", jsonObject{{"type", "string"}}}}
	default:
		s = jsonObject{{"type", "string"}}
	}
	if len(p.Enum) > 0 {
		if p.Type == "int" {
			var ns []int
			for _, e := range p.Enum {
				if n, err := strconv.Atoi(e); err == nil {
					ns = append(ns, n)
				}
			}
			s = append(s, jsonMember{"enum", ns})
		} else {
			s = append(s, jsonMember{"enum", p.Enum})
		}
	}
	return s
}

// jsonObject is a JSON object that keeps its keys' order, so that the
// schema reads in the types' order.
type jsonObject []jsonMember

type jsonMember struct {
	key   string
	value any
}

// MarshalJSON writes the members in order.
func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		for j, v := range []any{m.key, m.value} {
			var e bytes.Buffer
			enc := json.NewEncoder(&e)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				return nil, err
			}
			b.Write(bytes.TrimRight(e.Bytes(), "\n"))
			if j == 0 {
				b.WriteByte(':')
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
