package redact

import (
	"context"
	"log/slog"
)

// Handler is a slog.Handler that masks every record before the handler it
// wraps sees it: the message, and every string attribute value (in groups
// too) through the Redactor's String; an attribute whose key is sensitive
// ("password", "api_key", see Config.Keys) is replaced by the mask whole,
// whatever its kind. It is the logs' way through the one redaction pass.
type Handler struct {
	next slog.Handler
	r    *Redactor
}

var _ slog.Handler = (*Handler)(nil)

// NewHandler wraps next; a nil r means Default().
func NewHandler(next slog.Handler, r *Redactor) *Handler {
	if r == nil {
		r = Default()
	}
	return &Handler{next: next, r: r}
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle masks the record and passes it on.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs masks attrs and returns a handler that adds them.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = h.attr(a)
	}
	return &Handler{next: h.next.WithAttrs(masked), r: h.r}
}

// WithGroup returns a handler that puts later attributes in group name.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), r: h.r}
}

func (h *Handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	if h.r.sensitive(a.Key) && v.Kind() != slog.KindGroup {
		return slog.String(a.Key, h.r.mask)
	}
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		group := v.Group()
		masked := make([]any, len(group))
		for i, g := range group {
			masked[i] = h.attr(g)
		}
		return slog.Group(a.Key, masked...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.String(err.Error()))
		}
		return slog.String(a.Key, h.r.String(v.String()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}
