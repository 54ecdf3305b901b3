"""The `ranvier` subcommands, one module each: add_parser(subparsers, ...) registers its flags,
command(args) runs it and returns the exit status (cli.py dispatches).
"""
