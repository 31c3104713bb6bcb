package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotCompare draws the medians of a -compare run as two panels of one PNG:
// latency and bandwidth over the message sizes, one curve per contender (log
// scales), quiet host solid and busy host dashed.
func plotCompare(path string, r *compareRun) error {
	var panels []*plot.Plot
	for _, m := range []metric{latency, bandwidth} {
		p, n, err := plotPanel(r, m)
		if err != nil {
			return err
		}
		if n > 0 {
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return errors.New("plot: no measurement to draw")
	}
	const panelW, h = 12 * vg.Centimeter, 11 * vg.Centimeter
	img := vgimg.NewWith(vgimg.UseWH(panelW*vg.Length(len(panels)), h), vgimg.UseDPI(144))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: vg.Centimeter,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot: write %s: %w", path, err)
	}
	return f.Close()
}

// plotPanel builds the panel of metric m and returns how many curves it has.
func plotPanel(r *compareRun, m metric) (*plot.Plot, int, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("put %s (median of %d rounds)", map[metric]string{latency: "latency", bandwidth: "bandwidth"}[m], r.rounds)
	p.X.Label.Text = "message size (bytes)"
	p.Y.Label.Text = map[metric]string{latency: "one-way latency (µs)", bandwidth: "MB/s (10^6 B/s)"}[m]
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = sizeTicks(r.sizes)
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Top = m == latency
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	curves := 0
	for i, c := range r.contenders {
		for _, l := range r.loads {
			var xys plotter.XYs
			for _, size := range r.sizes {
				if v, n := r.s.median(sampleKey{c.name, size, m, l}); n > 0 && v > 0 && !math.IsInf(v, 0) {
					xys = append(xys, plotter.XY{X: float64(size), Y: v})
				}
			}
			if len(xys) == 0 {
				continue
			}
			line, points, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, 0, fmt.Errorf("plot: %s: %w", c.name, err)
			}
			line.Color = plotutil.Color(i)
			line.Width = vg.Points(1.5)
			points.Color = plotutil.Color(i)
			points.Shape = plotutil.Shape(i)
			name := c.name
			if l == busy {
				line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				name += " (busy host)"
			}
			p.Add(line, points)
			p.Legend.Add(name, line, points)
			curves++
		}
	}
	return p, curves, nil
}

// sizeTicks labels the measured sizes (8, 1K, 1M, ...).
func sizeTicks(sizes []int) plot.ConstantTicks {
	var t []plot.Tick
	for _, s := range sizes {
		t = append(t, plot.Tick{Value: float64(s), Label: sizeLabel(s)})
	}
	return t
}

// sizeLabel writes a size with the largest binary unit that divides it.
func sizeLabel(n int) string {
	for _, u := range []struct {
		shift  uint
		suffix string
	}{{30, "G"}, {20, "M"}, {10, "K"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.Itoa(n>>u.shift) + u.suffix
		}
	}
	return strconv.Itoa(n)
}
