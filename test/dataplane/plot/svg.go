package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// chart is one SVG line chart: Services on a log x axis, one series per
// mode.
type chart struct {
	title  string
	yLabel string
	logY   bool
	series []series
}

// The plot area inside the picture, in pixels.
const (
	width, height         = 720, 420
	left, right           = 80, 190 // the legend sits on the right
	top, bottom           = 40, 60
	plotW, plotH  float64 = width - left - right, height - top - bottom
)

var colors = map[string]string{
	"iptables": "#d62728", "nftables": "#1f77b4", "nftables-compact": "#2ca02c", "ipvs": "#9467bd",
}

func colorOf(name string) string {
	for mode, c := range colors {
		if name == mode || strings.HasPrefix(name, mode+" ") {
			return c
		}
	}
	return "#555555"
}

// axis maps values to pixels along one axis.
type axis struct {
	lo, hi float64 // in value space (log10 of it when log)
	log    bool
}

func (a axis) frac(v float64) float64 {
	if a.log {
		v = math.Log10(v)
	}
	if a.hi == a.lo {
		return 0.5
	}
	return (v - a.lo) / (a.hi - a.lo)
}

// ticks are the values to label: powers of ten (with 2 and 5 between
// them when the range is short) on a log axis, five steps on a linear one.
func (a axis) ticks() []float64 {
	var t []float64
	if !a.log {
		step := niceStep((a.hi - a.lo) / 5)
		for v := math.Ceil(a.lo/step) * step; v <= a.hi+step/1e6; v += step {
			t = append(t, v)
		}
		return t
	}
	mults := []float64{1}
	if a.hi-a.lo < 2.5 {
		mults = []float64{1, 2, 5}
	}
	for e := math.Floor(a.lo); e <= math.Ceil(a.hi); e++ {
		for _, m := range mults {
			v := m * math.Pow(10, e)
			if lv := math.Log10(v); lv >= a.lo-1e-9 && lv <= a.hi+1e-9 {
				t = append(t, v)
			}
		}
	}
	return t
}

// niceStep rounds a step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// axes fits the x (Services, log) and y axes to the data.
func (c chart) axes() (x, y axis) {
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.series {
		for _, p := range s.points {
			xlo, xhi = math.Min(xlo, p[0]), math.Max(xhi, p[0])
			if !c.logY || p[1] > 0 {
				ylo, yhi = math.Min(ylo, p[1]), math.Max(yhi, p[1])
			}
		}
	}
	x = axis{lo: math.Log10(xlo) - 0.15, hi: math.Log10(xhi) + 0.15, log: true}
	if c.logY {
		y = axis{lo: math.Floor(math.Log10(ylo)), hi: math.Ceil(math.Log10(yhi)), log: true}
	} else {
		y = axis{lo: math.Min(0, ylo), hi: yhi * 1.1}
		step := niceStep((y.hi - y.lo) / 5)
		y.hi = math.Ceil(y.hi/step) * step
	}
	return x, y
}

// svg draws the chart; with no data it draws only the title and a note.
func (c chart) svg() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(c.title))
	if !c.hasData() {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no data</text>`+"\n</svg>\n", left, top+40)
		return b.String()
	}
	x, y := c.axes()
	c.drawAxes(&b, x, y)
	for i, s := range c.series {
		c.drawSeries(&b, s, x, y)
		c.drawLegend(&b, s, i)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func (c chart) hasData() bool {
	for _, s := range c.series {
		if len(s.points) > 0 {
			return true
		}
	}
	return false
}

func px(a axis, v float64) float64 { return left + a.frac(v)*plotW }
func py(a axis, v float64) float64 { return top + plotH - a.frac(v)*plotH }

func (c chart) drawAxes(b *strings.Builder, x, y axis) {
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%g" height="%g" fill="none" stroke="#333"/>`+"\n", left, top, plotW, plotH)
	for _, v := range x.ticks() {
		xp := px(x, v)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%g" stroke="#ddd"/>`+"\n", xp, top, xp, top+plotH)
		fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", xp, top+plotH+18, label(v))
	}
	for _, v := range y.ticks() {
		yp := py(y, v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/>`+"\n", left, yp, left+plotW, yp)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, yp+4, label(v))
	}
	scale := ""
	if c.logY {
		scale = ", log scale"
	}
	fmt.Fprintf(b, `<text x="%g" y="%d" text-anchor="middle">Services (10 endpoints each, log scale)</text>`+"\n", left+plotW/2, height-18)
	fmt.Fprintf(b, `<text transform="translate(18 %g) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+plotH/2, html.EscapeString(c.yLabel+scale))
}

func (c chart) drawSeries(b *strings.Builder, s series, x, y axis) {
	col := colorOf(s.name)
	var pts []string
	for _, p := range s.points {
		if c.logY && p[1] <= 0 {
			continue // not drawable on a log axis; the table has it
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x, p[0]), py(y, p[1])))
	}
	dash := ""
	if s.dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), col, dash)
	for _, p := range pts {
		xy := strings.Split(p, ",")
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", xy[0], xy[1], col)
	}
}

func (c chart) drawLegend(b *strings.Builder, s series, i int) {
	lx, ly := float64(width-right+16), float64(top+10+i*20)
	dash := ""
	if s.dashed {
		dash = ` stroke-dasharray="6 4"`
	}
	fmt.Fprintf(b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+24, ly, colorOf(s.name), dash)
	fmt.Fprintf(b, `<text x="%g" y="%g">%s</text>`+"\n", lx+30, ly+4, html.EscapeString(s.name))
}

// label prints a tick value briefly: 10k, 2.5, 0.01.
func label(v float64) string {
	switch {
	case v >= 1e6 && math.Mod(v, 1e6) == 0:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3 && math.Mod(v, 1e3) == 0:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", math.Round(v*1e6)/1e6)
}
