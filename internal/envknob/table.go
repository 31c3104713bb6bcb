package envknob

import "strings"

// Markdown returns the registry as the Markdown table the README prints under
// "Environment knobs": one row per variable, in registry order.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| variable | default | accepted values | effect | read by |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, k := range knobs {
		by := "`" + k.ReadBy + "`"
		if k.Test {
			by += " (tests)"
		}
		cells := []string{"`" + string(k.Name) + "`", k.Default, k.Values, k.Doc, by}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}
