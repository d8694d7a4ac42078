"""What may overrule the classifier: too little data to judge, and physical vetoes that rule a class out."""
