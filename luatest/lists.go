package luatest

var listCommands = map[string]handler{}
