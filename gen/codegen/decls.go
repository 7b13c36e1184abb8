// The package-level names of the generated package, noted file by file while
// the model is built: two spec names that become one Go name are an error found
// there, before any code is written.

package codegen

import (
	"errors"
	"fmt"
	"sort"
)

// declSet is every package-level name each file declares ("T" for a type,
// function, const or var, "T.M" for a method), in declaration order.
type declSet struct {
	pkg   string
	files map[string][]string
}

func (d *declSet) add(file string, names ...string) {
	d.files[file] = append(d.files[file], names...)
}

// collisions reports each name declared twice, naming the files of both, in
// file name order.
func (d *declSet) collisions() error {
	files := make([]string, 0, len(d.files))
	for f := range d.files {
		files = append(files, f)
	}
	sort.Strings(files)
	seen := map[string]string{}
	var errs []error
	for _, file := range files {
		for _, name := range d.files[file] {
			if other, dup := seen[name]; dup {
				errs = append(errs, fmt.Errorf("codegen %s: %s is declared in %s and %s: two spec names map to one Go name; rename one", d.pkg, name, other, file))
				continue
			}
			seen[name] = file
		}
	}
	return errors.Join(errs...)
}
