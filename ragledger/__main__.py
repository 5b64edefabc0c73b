from ragledger.cli import main

main()
