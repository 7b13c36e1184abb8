package catalog

// mapView is the drawn map: users on the left, the scripts they may run in the
// middle, the keys and channels on the right, an edge for each grant and each
// read or write.
type mapView struct {
	Width, Height int
	Nodes         []mapNode
	Edges         []mapEdge
	Columns       []mapLabel
}

type mapNode struct {
	Anchor, Label, Class string
	X, Y, W              int
}

type mapEdge struct {
	X1, Y1, X2, Y2 int
	Class, Title   string
}

type mapLabel struct {
	X     int
	Label string
}

const (
	rowHeight = 24
	nodeH     = 18
	top       = 40
	colUser   = 10
	colScript = 260
	colKey    = 560
	wUser     = 170
	wScript   = 210
	wKey      = 260
)

// drawMap lays the map out in three columns.
func drawMap(p *page) mapView {
	m := mapView{Width: colKey + wKey + 20, Columns: []mapLabel{{colUser, "users"}, {colScript, "scripts"}, {colKey, "keys and channels"}}}
	userY, scriptY, keyY := map[string]int{}, map[string]int{}, map[string]int{}
	for _, u := range p.Users {
		if u.Generated {
			continue
		}
		y := top + len(userY)*rowHeight
		userY[u.Anchor] = y
		m.Nodes = append(m.Nodes, mapNode{Anchor: u.Anchor, Label: u.Name, Class: "user", X: colUser, Y: y, W: wUser})
	}
	for i, s := range p.Scripts {
		y := top + i*rowHeight
		scriptY[s.Name] = y
		cls := "script"
		if s.ReadOnly {
			cls = "script ro"
		}
		m.Nodes = append(m.Nodes, mapNode{Anchor: s.Anchor, Label: s.Name, Class: cls, X: colScript, Y: y, W: wScript})
	}
	n := 0
	for _, k := range p.Keys {
		y := top + n*rowHeight
		n++
		keyY["key:"+k.Name] = y
		m.Nodes = append(m.Nodes, mapNode{Anchor: k.Anchor, Label: k.Name, Class: "key", X: colKey, Y: y, W: wKey})
	}
	for _, c := range p.Channels {
		y := top + n*rowHeight
		n++
		keyY["channel:"+c.Name] = y
		m.Nodes = append(m.Nodes, mapNode{Anchor: c.Anchor, Label: c.Name + " (channel)", Class: "channel", X: colKey, Y: y, W: wKey})
	}
	mid := nodeH / 2
	for _, s := range p.Scripts {
		sy := scriptY[s.Name]
		if uy, ok := userY[s.UserAnchor]; ok {
			m.Edges = append(m.Edges, mapEdge{X1: colUser + wUser, Y1: uy + mid, X2: colScript, Y2: sy + mid, Class: "runs", Title: s.User + " runs " + s.Name})
		}
		for _, u := range s.Keys {
			ky, ok := keyY["key:"+u.KeyName]
			if !ok {
				continue
			}
			cls := "reads"
			if u.Access != "read" {
				cls = "writes"
			}
			m.Edges = append(m.Edges, mapEdge{X1: colScript + wScript, Y1: sy + mid, X2: colKey, Y2: ky + mid, Class: cls, Title: s.Name + " " + u.Access + " " + u.KeyName})
		}
	}
	for _, c := range p.Channels {
		cy := keyY["channel:"+c.Name]
		for _, u := range c.Users {
			if uy, ok := userY[u.Anchor]; ok {
				m.Edges = append(m.Edges, mapEdge{X1: colUser + wUser, Y1: uy + mid, X2: colKey, Y2: cy + mid, Class: "pubsub", Title: u.Name + " publishes and subscribes to " + c.Name})
			}
		}
	}
	rows := max(len(userY), len(p.Scripts), n)
	m.Height = top + rows*rowHeight + 10
	return m
}
