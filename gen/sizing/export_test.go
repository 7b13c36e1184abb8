package sizing

// ArgScalar is the value a step gives an argument, as the file wrote it.
func ArgScalar(st *Step, name string) string { return st.Args[name].Scalar }
