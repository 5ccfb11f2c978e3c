from tileiropt.cli import main

main()
