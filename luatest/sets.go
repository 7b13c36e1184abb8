package luatest

var setCommands = map[string]handler{}
