package luatest

var streamCommands = map[string]handler{}
