package reports

import (
	"fmt"
	"maps"
	"slices"
)

// faults draws a row per fault, grouped under its target: its windows
// shaded, and a solid bar from its first to its last hit.
func (b *htmlChart) faults() {
	if len(b.r.Faults) == 0 {
		return
	}
	var targets []string
	byTarget := map[string][]Fault{}
	for _, f := range b.r.Faults {
		if _, ok := byTarget[f.Target]; !ok {
			targets = append(targets, f.Target)
		}
		byTarget[f.Target] = append(byTarget[f.Target], f)
	}
	for _, t := range targets {
		b.header(t)
		for _, f := range byTarget[t] {
			label := fmt.Sprintf("%s (%s hits)", f.Name, htmlNum(f.Hits))
			row := b.row(label, "fault")
			row.Tip = fmt.Sprintf("fault %s (%s, %s) on %s: %d windows", f.Name, f.Model, f.Class, f.Target, len(f.Windows))
			if f.Truncated {
				row.Tip += " listed, and more"
			}
			if f.Hits > 0 {
				row.Tip += fmt.Sprintf("; %s hits, the first at %s, the last at %s", htmlNum(f.Hits), htmlOffset(f.FirstHitMs), htmlOffset(f.LastHitMs))
			}
			// Windows closer than a unit are drawn as one; each has its
			// own tooltip while there are few.
			few := len(f.Windows) <= 20
			for _, w := range f.Windows {
				x0, x1 := b.x(w[0]), b.x(w[1])
				if n := len(row.Rects); n > 0 && x0 <= row.Rects[n-1].X+row.Rects[n-1].W+1 {
					last := &row.Rects[n-1]
					last.W = htmlRound(max(last.W, x1-last.X))
					continue
				}
				r := htmlRect{X: x0, Y: row.Y + 2, W: htmlRound(max(x1-x0, 1.5)), H: htmlLaneH - 4, Fill: htmlFaultStyle.fill(), Class: "window"}
				if few {
					r.Title = fmt.Sprintf("fault %s on from %s until %s", f.Name, htmlOffset(w[0]), htmlOffset(w[1]))
				}
				row.Rects = append(row.Rects, r)
			}
			if f.Hits > 0 {
				x0, x1 := b.x(f.FirstHitMs), b.x(f.LastHitMs)
				row.Rects = append(row.Rects, htmlRect{
					X: x0, Y: row.Y + htmlLaneH/2 - 1.5, W: htmlRound(max(x1-x0, 2)), H: 3, Class: "hits",
					Title: fmt.Sprintf("fault %s hit %s times, the first at %s, the last at %s", f.Name, htmlNum(f.Hits), htmlOffset(f.FirstHitMs), htmlOffset(f.LastHitMs)),
				})
			}
		}
	}
	b.v.Patterns = append(b.v.Patterns, htmlFaultStyle.def())
}

// htmlSegment is a span of one breaker state.
type htmlSegment struct {
	from, to int64
	state    string
}

// htmlBreakerSegments returns each breaker's states over the run: from its
// transitions when it has any (exact to the millisecond), else from the
// sampled series.
func htmlBreakerSegments(r *Result) (names []string, segs map[string][]htmlSegment) {
	segs = map[string][]htmlSegment{}
	end := max(r.EndedAtMs, 1)
	byName := map[string][]Transition{}
	for _, t := range r.Breakers {
		if _, ok := byName[t.Breaker]; !ok {
			names = append(names, t.Breaker)
		}
		byName[t.Breaker] = append(byName[t.Breaker], t)
	}
	for _, name := range names {
		ts := byName[name]
		at, state := int64(0), ts[0].From
		for _, t := range ts {
			if t.AtMs > at {
				segs[name] = append(segs[name], htmlSegment{at, t.AtMs, state})
			}
			at, state = t.AtMs, t.To
		}
		if end > at {
			segs[name] = append(segs[name], htmlSegment{at, end, state})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Series.Breakers)) {
		if _, ok := byName[name]; ok {
			continue
		}
		names = append(names, name)
		states, at := r.Series.Breakers[name], r.Series.AtMs
		for i := 0; i < len(states) && i < len(at); {
			j := i
			for j < len(states) && j < len(at) && states[j] == states[i] {
				j++
			}
			to := end
			if j < len(at) {
				to = at[j]
			}
			segs[name] = append(segs[name], htmlSegment{at[i], to, states[i]})
			i = j
		}
	}
	return names, segs
}

// breakers draws a band per breaker, its state in colour, pattern and word.
// A run of spans too narrow to see is drawn as one, in the worst state among
// them, so that a flapping breaker's band stays small and its blips visible.
func (b *htmlChart) breakers() {
	names, segs := htmlBreakerSegments(b.r)
	if len(names) == 0 {
		return
	}
	b.header("circuit breakers")
	shown, more := htmlCapped(names, htmlMaxLaneRows)
	type span struct {
		x0, x1   float64
		from, to int64
		state    string
		rank, n  int
	}
	for _, name := range shown {
		row := b.row(name, "breaker")
		var spans []span
		for _, s := range segs[name] {
			x0, x1 := b.x(s.from), b.x(s.to)
			_, rank := htmlBreakerStyle(s.state)
			if k := len(spans) - 1; k >= 0 {
				c := &spans[k]
				if c.state == s.state || (c.x1-c.x0 < 1.5 && x1-x0 < 1.5) {
					c.x1, c.to, c.n = x1, s.to, c.n+1
					if rank > c.rank {
						c.state, c.rank = s.state, rank
					}
					continue
				}
			}
			spans = append(spans, span{x0, x1, s.from, s.to, s.state, rank, 1})
		}
		for _, s := range spans {
			st, _ := htmlBreakerStyle(s.state)
			r := htmlRect{X: s.x0, Y: row.Y + 1, W: htmlRound(max(s.x1-s.x0, 1.5)), H: htmlLaneH - 2,
				Fill: st.fill(), Class: "band " + st.id}
			// A tooltip where there is room to point at it.
			switch {
			case r.W < 4:
			case s.n > 1:
				r.Title = fmt.Sprintf("breaker %s: %d states from %s until %s, the worst %s", name, s.n, htmlOffset(s.from), htmlOffset(s.to), s.state)
			default:
				r.Title = fmt.Sprintf("breaker %s %s from %s until %s", name, s.state, htmlOffset(s.from), htmlOffset(s.to))
			}
			if r.W >= 46 {
				r.Label, r.LX, r.LY = s.state, htmlRound(r.X+4), r.Y+r.H/2+4
			}
			row.Rects = append(row.Rects, r)
		}
	}
	if more > 0 {
		b.row(fmt.Sprintf("%d more breakers", more), "breaker").Note = "see the transitions table"
	}
	b.v.Patterns = append(b.v.Patterns, htmlClosedStyle.def(), htmlHalfOpenStyle.def(), htmlOpenStyle.def())
}

// alerts draws a row of markers per receiver: a triangle for a page, a
// filled circle for another firing alert, a ring for a resolved one.
func (b *htmlChart) alerts() {
	a := b.r.Alerts
	recv := slices.Collect(maps.Keys(a.ByReceiver))
	for _, d := range a.Deliveries {
		recv = append(recv, d.Receiver)
	}
	names := htmlOrdered(recv, nil)
	if len(names) == 0 && a.Notifications == 0 {
		return
	}
	b.header("alerts by receiver")
	shown, _ := htmlCapped(names, htmlMaxLaneRows)
	rows := map[string]int{}
	for _, n := range shown {
		b.row(n, "receiver")
		rows[n] = len(b.v.Rows) - 1
	}
	other := -1
	if len(names) > len(shown) {
		b.row("other receivers", "receiver")
		other = len(b.v.Rows) - 1
	}
	for _, d := range a.Deliveries {
		i, ok := rows[d.Receiver]
		if !ok {
			i = other
		}
		if i < 0 {
			continue
		}
		row := &b.v.Rows[i]
		if len(row.Markers) >= htmlMaxMarks {
			continue
		}
		shape := "firing"
		switch {
		case d.IsPage():
			shape = "page"
		case d.Status != "firing":
			shape = "resolved"
		}
		title := fmt.Sprintf("%s %s → %s: %s %s %s ×%d: %s", htmlOffset(d.AtMs), shape, d.Receiver, d.Name, d.Severity, d.Status, d.Count, d.Summary)
		if d.Attempt > 1 {
			title += fmt.Sprintf(" (delivered on attempt %d)", d.Attempt)
		}
		row.Markers = append(row.Markers, htmlMarker{D: htmlMarkerPath(shape, b.x(d.AtMs), row.Y+htmlLaneH/2), Shape: shape, Title: title})
	}
	for _, i := range rows {
		if r := &b.v.Rows[i]; len(r.Markers) == 0 {
			r.Note = "no delivery in the listed ones"
		}
	}
}

// steps draws a diamond per operator step; a failed step is crossed.
func (b *htmlChart) steps() {
	if len(b.r.Steps) == 0 {
		return
	}
	b.header("operator")
	row := b.row(fmt.Sprintf("steps (%d)", len(b.r.Steps)), "steps")
	for _, s := range b.r.Steps {
		if len(row.Markers) >= htmlMaxMarks {
			break
		}
		shape, title := "step", fmt.Sprintf("%s %s: %s", htmlOffset(s.AtMs), s.Kind, s.Detail)
		if s.Error != "" {
			shape, title = "step-error", title+" — failed: "+s.Error
		}
		row.Markers = append(row.Markers, htmlMarker{D: htmlMarkerPath(shape, b.x(s.AtMs), row.Y+htmlLaneH/2), Shape: shape, Title: title})
	}
}
