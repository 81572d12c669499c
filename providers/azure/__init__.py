"""Azure: GitHub credentials held in Azure Key Vault (``keyvault.py``), read as ARC reads them."""
